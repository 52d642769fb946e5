#!/usr/bin/env node
// HF tokenizers oracle (@anush008/tokenizers = the HF `tokenizers` Rust core as a Node addon).
//
// Reads one JSON request from stdin:
//   {"tokenizer": "/path/tokenizer.json",
//    "encode": [{"text": "...", "add_special_tokens": false}, ...],
//    "decode": [{"ids": [1, 2], "skip_special_tokens": false}, ...]}
// and writes {"encode": [[ids...], ...], "decode": ["text", ...]} to stdout.
// Used by tests/unit/tokenizer/oracle_test.cc; run `scripts/bootstrap.sh` to install node_modules.
'use strict';
const path = require('path');
const { Tokenizer } = require(path.join(__dirname, '..', '..', 'node_modules', '@anush008', 'tokenizers'));

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const tokenizer = Tokenizer.fromFile(request.tokenizer);
  const result = { encode: [], decode: [] };
  for (const item of request.encode || []) {
    const encoding = await tokenizer.encode(item.text, null, { addSpecialTokens: !!item.add_special_tokens });
    result.encode.push(Array.from(encoding.getIds()));
  }
  for (const item of request.decode || []) {
    result.decode.push(await tokenizer.decode(item.ids, !!item.skip_special_tokens));
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((err) => {
  process.stderr.write(`oracle.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
