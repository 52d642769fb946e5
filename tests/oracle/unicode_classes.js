#!/usr/bin/env node
// Dumps, for each Unicode general-category class the supported pre-tokenizer regexes use, the
// code points HF tokenizers' regex engine (Oniguruma inside @anush008/tokenizers) puts in it, as
// ranges: {"L": [[lo, hi], ...], ...}. Input to gen_unicode_delta.py.
'use strict';
const path = require('path');
const { Tokenizer } = require(path.join(__dirname, '..', '..', 'node_modules', '@anush008', 'tokenizers'));

const classes = ['L', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'M', 'Mn', 'Mc', 'Me', 'N', 'Nd', 'Nl', 'No', 'P', 'S', 'Z'];
let all = '';
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  all += String.fromCodePoint(cp);
}
const result = {};
for (const cls of classes) {
  const json = JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null, post_processor: null,
    decoder: null, model: { type: 'BPE', vocab: {}, merges: [] },
    pre_tokenizer: { type: 'Split', pattern: { Regex: `\\p{${cls}}+` }, behavior: 'Removed', invert: true },
  });
  const pieces = Tokenizer.fromString(json).getPreTokenizer().preTokenizeString(all);
  const ranges = [];
  for (const [piece] of pieces) {
    for (const ch of piece) {
      const cp = ch.codePointAt(0);
      const last = ranges[ranges.length - 1];
      if (last && last[1] + 1 === cp) last[1] = cp;
      else ranges.push([cp, cp]);
    }
  }
  result[cls] = ranges;
}
process.stdout.write(JSON.stringify(result) + '\n');
