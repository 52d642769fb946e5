#!/usr/bin/env node
// Jinja oracle: renders templates with @huggingface/jinja (the Jinja implementation of
// Hugging Face's transformers.js, configured as transformers renders chat templates:
// trim_blocks, lstrip_blocks, raise_exception, strftime_now, tojson).
//
// Reads one JSON request from stdin:
//   {"now": [2025, 6, 28, 13, 5, 9],            // optional: what strftime_now() sees (local time)
//    "cases": [{"template": "...", "context": {...}}, ...]}
// and writes {"results": [{"ok": true, "output": "..."} | {"ok": false, "error": "..."}, ...]}.
// Used by tests/unit/jinja/oracle_test.cc; run `scripts/bootstrap.sh` to install node_modules.
'use strict';
const path = require('path');
const { Template } = require(path.join(__dirname, '..', '..', 'node_modules', '@huggingface', 'jinja'));

function pinClock(fields) {
  // strftime_now() calls `new Date()`: make that the pinned local time.
  const RealDate = Date;
  const pinned = new RealDate(fields[0], fields[1] - 1, fields[2], fields[3] || 0, fields[4] || 0, fields[5] || 0);
  globalThis.Date = class extends RealDate {
    constructor(...args) {
      if (args.length === 0) {
        super(pinned.getTime());
      } else {
        super(...args);
      }
    }
    static now() {
      return pinned.getTime();
    }
  };
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  if (Array.isArray(request.now)) pinClock(request.now);
  const results = [];
  for (const item of request.cases || []) {
    try {
      const template = new Template(item.template);
      results.push({ ok: true, output: template.render(item.context || {}) });
    } catch (err) {
      results.push({ ok: false, error: String(err && err.message ? err.message : err) });
    }
  }
  process.stdout.write(JSON.stringify({ results }));
}

main().catch((err) => {
  process.stderr.write(`jinja_oracle.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
