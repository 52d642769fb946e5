#!/usr/bin/env node
// Oracle side of bench/tokenizer_encode.cc: loads a tokenizer.json with the HF tokenizers core
// (@anush008/tokenizers) and encodes every document of a JSON array file, one call per document,
// single-threaded (each call waits for the previous one).
// Usage: node bench_oracle.js TOKENIZER_JSON DOCUMENTS_JSON
// Prints {"load_ms", "encode_s", "bytes", "tokens", "ids_fnv1a"} (FNV-1a 64 over every id as 4
// little-endian bytes, to compare output with the native side).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require(path.join(__dirname, '..', '..', 'node_modules', '@anush008', 'tokenizers'));

async function main() {
  const [tokenizerPath, documentsPath] = process.argv.slice(2);
  const documents = JSON.parse(fs.readFileSync(documentsPath, 'utf8'));
  let t0 = process.hrtime.bigint();
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  await tokenizer.encode('warm up', null, { addSpecialTokens: false });
  let tokens = 0;
  let hash = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = (1n << 64n) - 1n;
  const all = [];
  t0 = process.hrtime.bigint();
  for (const doc of documents) {
    const encoding = await tokenizer.encode(doc, null, { addSpecialTokens: false });
    all.push(encoding.getIds());
  }
  const encodeS = Number(process.hrtime.bigint() - t0) / 1e9;
  for (const ids of all) {
    for (const id of ids) {
      tokens++;
      for (let k = 0; k < 4; k++) {
        hash ^= BigInt((id >>> (8 * k)) & 0xff);
        hash = (hash * prime) & mask;
      }
    }
  }
  const bytes = documents.reduce((n, d) => n + Buffer.byteLength(d, 'utf8'), 0);
  process.stdout.write(JSON.stringify({ load_ms: loadMs, encode_s: encodeS, bytes, tokens, ids_fnv1a: hash.toString(16) }) + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench_oracle.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
