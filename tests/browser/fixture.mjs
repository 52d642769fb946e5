// Result folders with known contents for the dashboard's browser tests: agg records as
// `ixbench aggregate` writes them, one folder per run (run_manifest.json gives its id and date).
//
//   sweep-a   measured, 2026-11-01: dsr1 1024/1024 h200 sglang fp8 (5 concs), b200 sglang fp8 (6
//             concs, with power); a model whose name is markup (3 concs on h200)
//   predict-b predicted, 2026-11-15: dsr1 1024/1024 h200 sglang fp8 (5 concs)
//   sweep-c   measured, 2026-11-20: dsr1 8192/1024 h200 vllm fp8 (4 concs)
import fs from 'node:fs';
import path from 'node:path';

export const EVIL_MODEL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">';

// Expected counts the tests check.
export const EXPECT = {
  defaultPanelPoints: 16,   // dsr1 fixed-seq-len 1024/1024: 5 + 6 measured, 5 predicted
  withoutB200: 10,
  measuredOnly: 11,
  energyPoints: 6,          // b200 has power
  h200Frontier: 5,          // h200 measured: every point on the throughput/interactivity frontier
  fromNov10: 5,             // only the predicted run is dated on or after 2026-11-10
  evilPanelPoints: 3,
  longSeqPanelPoints: 4,
};

function agg({ model, prefix, hw, framework, precision, isl, osl, conc, tp, tputPerGpu, intvty, e2el, ttft, power }) {
  const record = {
    hw, conc, image: 'lmsysorg/sglang:v0.5.9-cu130', model, infmax_model_prefix: prefix, framework, precision,
    spec_decoding: 'none', disagg: false, recipe_fingerprint: '', isl, osl, is_multinode: false, tp, pp: 1,
    dcp_size: 1, pcp_size: 1, ep: 1, dp_attention: 'false',
    tput_per_gpu: tputPerGpu, output_tput_per_gpu: tputPerGpu / 2, input_tput_per_gpu: tputPerGpu / 2,
    mean_ttft: ttft, median_ttft: ttft, p90_ttft: ttft * 1.3, median_tpot: 1 / intvty, median_intvty: intvty,
    p90_intvty: intvty * 0.9, median_e2el: e2el, p90_e2el: e2el * 1.2,
  };
  if (power) {
    Object.assign(record, {
      power_metric_schema_version: 2, avg_power_w: 800, total_gpu_energy_j: 64000,
      joules_per_output_token: 800 / tputPerGpu * 2, joules_per_total_token: 800 / tputPerGpu, power_valid: 1,
    });
  }
  return record;
}

// Throughput rises and interactivity falls with concurrency: every point is on the frontier.
function series(base, concs, scale) {
  return concs.map((conc) => agg({
    ...base, conc, tputPerGpu: scale * 100 * Math.sqrt(conc), intvty: 200 / Math.sqrt(conc), e2el: 2 + conc / 16,
    ttft: 0.1 + conc / 200,
  }));
}

function writeRun(root, name, runId, createdAt, records) {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'run_manifest.json'), JSON.stringify({ run_id: runId, created_at: createdAt }));
  records.forEach((record, i) => {
    const stem = `${record.infmax_model_prefix.replace(/[^A-Za-z0-9]+/g, '')}_${record.isl}_${record.osl}_` +
      `${record.hw}_${record.framework}_conc${record.conc}_${i}`;
    fs.writeFileSync(path.join(dir, `agg_${stem}.json`), JSON.stringify(record, null, 2));
  });
  return dir;
}

export function writeFixture(root) {
  const dsr1 = { model: 'deepseek-ai/DeepSeek-R1-0528', prefix: 'dsr1', framework: 'sglang', precision: 'fp8',
    isl: 1024, osl: 1024, tp: 8 };
  const a = writeRun(root, 'sweep-a', 'sweep-a', '2026-11-01T10:00:00Z', [
    ...series({ ...dsr1, hw: 'h200' }, [4, 8, 16, 32, 64], 1),
    ...series({ ...dsr1, hw: 'b200', power: true }, [4, 8, 16, 32, 64, 128], 2),
    ...series({ ...dsr1, model: EVIL_MODEL, prefix: EVIL_MODEL, hw: 'h200' }, [4, 8, 16], 1),
  ]);
  const b = writeRun(root, 'predict-b', 'predict-b', '2026-11-15T10:00:00Z',
    series({ ...dsr1, hw: 'h200' }, [4, 8, 16, 32, 64], 1.1));
  const c = writeRun(root, 'sweep-c', 'sweep-c', '2026-11-20T10:00:00Z',
    series({ ...dsr1, hw: 'h200', framework: 'vllm', isl: 8192 }, [4, 16, 64, 256], 0.5));
  return { measured: [a, c], predicted: [b] };
}
