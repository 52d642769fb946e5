// The ixbench dashboard page: filter menus, charts, point details and the results table.
//
// The data comes aggregated: points, curves (one per panel x hardware x framework x precision x
// spec decoding x disagg x kind) and each curve's Pareto frontier per chart, computed by ixbench
// from the store. A static report inlines it (#ix-data); the served dashboard fetches one panel
// (model, scenario, ISL/OSL, dates) from /api/view. Either way this script only picks whole curves
// and draws them. Every text from the store goes in with textContent, never as HTML.
(function () {
  'use strict';

  const embedded = JSON.parse(document.getElementById('ix-data').textContent);
  const isStatic = embedded !== null;
  const PALETTE = ['#2f6fdb', '#d9480f', '#2b8a3e', '#9c36b5', '#e67700', '#0b7285', '#c2255c', '#5c940d',
                   '#364fc7', '#862e9c', '#a61e4d', '#087f5b'];
  const TABLE_ROWS = 1000;
  const COLUMNS = [
    ['kind', 'kind'], ['model', 'model'], ['hw', 'hw'], ['framework', 'framework'], ['precision', 'precision'],
    ['spec_decoding', 'spec'], ['date', 'date'], ['tp', 'tp'], ['ep', 'ep'], ['num_gpus', 'gpus'], ['conc', 'conc'],
    ['isl', 'isl'], ['osl', 'osl'], ['tput_per_gpu', 'tok/s/GPU'], ['output_tput_per_gpu', 'out tok/s/GPU'],
    ['median_intvty', 'intvty'], ['median_e2el', 'E2EL s'], ['p90_e2el', 'P90 E2EL s'], ['median_ttft', 'TTFT s'],
    ['cost_per_mtok', '$/Mtok'], ['joules_per_total_token', 'J/tok'], ['run_id', 'run'], ['stem', 'result'],
  ];

  const state = {
    facets: null,
    view: { points: [], curves: [], charts: [], missing_costs: [] },
    charts: new Map(),
    colors: new Map(),
    rows: [],
    request: 0,
  };

  // ---- small helpers ----------------------------------------------------------------------------
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function byId(id) { return document.getElementById(id); }
  function formatNumber(value) {
    if (value === null || value === undefined || Number.isNaN(value)) return '\u2014';
    if (typeof value !== 'number') return String(value);
    const magnitude = Math.abs(value);
    if (magnitude !== 0 && (magnitude < 0.01 || magnitude >= 1e6)) return value.toExponential(3);
    return value.toLocaleString('en-US', { maximumFractionDigits: magnitude < 10 ? 4 : 1 });
  }
  function setStatus(text, isError) {
    const status = byId('status');
    status.textContent = text;
    status.className = isError ? 'error' : '';
  }
  function seqKey(isl, osl) { return isl + '/' + osl; }
  function modelLabel(model) { return model; }

  // ---- filters ----------------------------------------------------------------------------------
  function fillSelect(select, values, selected) {
    select.replaceChildren();
    for (const value of values) {
      const option = el('option', null, value.label);
      option.value = value.value;
      select.appendChild(option);
    }
    if (values.some((v) => v.value === selected)) select.value = selected;
  }
  function fillChecks(fieldset, values, name) {
    const legend = fieldset.querySelector('legend');
    fieldset.replaceChildren(legend);
    for (const value of values) {
      const label = el('label');
      const box = el('input');
      box.type = 'checkbox';
      box.checked = true;
      box.value = value;
      box.name = name;
      box.addEventListener('change', render);
      label.appendChild(box);
      label.appendChild(document.createTextNode(value));
      fieldset.appendChild(label);
    }
  }
  function checkedValues(id) {
    return new Set(Array.from(byId(id).querySelectorAll('input:checked'), (box) => box.value));
  }
  function panels() { return state.facets ? state.facets.panels : []; }
  function bestPanel() {
    let best = null;
    for (const panel of panels()) if (!best || panel.results > best.results) best = panel;
    return best;
  }
  function refreshScenarioAndSeq() {
    const model = byId('f-model').value;
    const scenarios = [...new Set(panels().filter((p) => p.model === model).map((p) => p.scenario))];
    fillSelect(byId('f-scenario'), scenarios.map((s) => ({ value: s, label: s })), byId('f-scenario').value);
    const scenario = byId('f-scenario').value;
    const seqs = panels().filter((p) => p.model === model && p.scenario === scenario);
    fillSelect(byId('f-seq'), seqs.map((p) => ({ value: seqKey(p.isl, p.osl), label: seqKey(p.isl, p.osl) +
      ' (' + p.results + ')' })), byId('f-seq').value);
  }
  function setupFilters(facets) {
    state.facets = facets;
    const best = bestPanel();
    const models = [...new Set(panels().map((p) => p.model))];
    fillSelect(byId('f-model'), models.map((m) => ({ value: m, label: modelLabel(m) })), best ? best.model : '');
    if (best) {
      fillSelect(byId('f-scenario'), [{ value: best.scenario, label: best.scenario }], best.scenario);
      fillSelect(byId('f-seq'), [{ value: seqKey(best.isl, best.osl), label: '' }], seqKey(best.isl, best.osl));
    }
    refreshScenarioAndSeq();
    fillChecks(byId('f-hw'), facets.hardware, 'hw');
    fillChecks(byId('f-framework'), facets.frameworks, 'framework');
    fillChecks(byId('f-precision'), facets.precisions, 'precision');
    fillChecks(byId('f-kind'), ['measured', 'predicted'], 'kind');
    for (const id of ['f-from', 'f-to']) {
      const input = byId(id);
      if (facets.first_date) input.min = facets.first_date;
      if (facets.last_date) input.max = facets.last_date;
      if (isStatic) {
        input.disabled = true;
        input.title = 'A static report holds the dates it was written with (ixbench report --from/--to)';
      }
    }
    if (isStatic) {
      byId('f-from').value = facets.first_date || '';
      byId('f-to').value = facets.last_date || '';
    }
    byId('f-model').addEventListener('change', () => { refreshScenarioAndSeq(); loadPanel(); });
    byId('f-scenario').addEventListener('change', () => { refreshScenarioAndSeq(); loadPanel(); });
    byId('f-seq').addEventListener('change', loadPanel);
    byId('f-from').addEventListener('change', loadPanel);
    byId('f-to').addEventListener('change', loadPanel);
  }
  function panelFilter() {
    const [isl, osl] = (byId('f-seq').value || '0/0').split('/').map(Number);
    return { model: byId('f-model').value, scenario: byId('f-scenario').value, isl: isl, osl: osl };
  }

  // ---- data -------------------------------------------------------------------------------------
  async function fetchJson(url) {
    const response = await fetch(url);
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const message = body && body.error ? body.error.message : response.status + ' ' + response.statusText;
      throw new Error(url + ': ' + message);
    }
    return body;
  }
  async function loadPanel() {
    const panel = panelFilter();
    if (isStatic) {
      state.view = embedded.view;
      clearDetails();
      render();
      return;
    }
    const params = new URLSearchParams();
    params.set('model', panel.model);
    params.set('scenario', panel.scenario);
    if (panel.isl > 0) params.set('isl', String(panel.isl));
    if (panel.osl > 0) params.set('osl', String(panel.osl));
    if (byId('f-from').value) params.set('from', byId('f-from').value);
    if (byId('f-to').value) params.set('to', byId('f-to').value);
    const request = ++state.request;
    setStatus('Loading\u2026');
    try {
      const view = await fetchJson('/api/view?' + params.toString());
      if (request !== state.request) return;  // a newer choice was made meanwhile
      state.view = view;
      clearDetails();
      render();
    } catch (error) {
      setStatus(error.message, true);
    }
  }

  // ---- drawing ----------------------------------------------------------------------------------
  function visibleCurves() {
    const panel = panelFilter();
    const hw = checkedValues('f-hw'), framework = checkedValues('f-framework');
    const precision = checkedValues('f-precision'), kind = checkedValues('f-kind');
    return state.view.curves.filter((c) => c.model === panel.model && c.scenario === panel.scenario &&
      c.isl === panel.isl && c.osl === panel.osl && hw.has(c.hw) && framework.has(c.framework) &&
      precision.has(c.precision) && kind.has(c.kind));
  }
  function colorOf(curve) {
    if (!state.colors.has(curve.line)) state.colors.set(curve.line, PALETTE[state.colors.size % PALETTE.length]);
    return state.colors.get(curve.line);
  }
  function xy(chart, index) {
    const point = state.view.points[index];
    const x = chart.x === 'conc' ? point.conc : point[chart.x];
    const y = point[chart.y];
    if (typeof x !== 'number' || typeof y !== 'number' || !(x > 0) || !(y > 0)) return null;
    return { x: x, y: y, index: index };
  }
  function datasetsFor(chart, curves) {
    const datasets = [];
    for (const curve of curves) {
      const color = colorOf(curve);
      const predicted = curve.kind === 'predicted';
      let points = curve.points.map((i) => xy(chart, i)).filter((p) => p !== null);
      if (points.length === 0) continue;
      if (!chart.frontier) points.sort((a, b) => a.x - b.x);
      datasets.push({
        label: curve.label, data: points, ixRole: 'points', ixCurve: curve,
        showLine: !chart.frontier, borderColor: color, backgroundColor: predicted ? 'transparent' : color,
        borderDash: predicted ? [5, 4] : [], pointStyle: predicted ? 'triangle' : 'circle',
        pointRadius: 4, pointHoverRadius: 6, borderWidth: predicted ? 1.5 : 1,
      });
      if (chart.frontier) {
        const line = (curve.frontiers[chart.id] || []).map((i) => xy(chart, i)).filter((p) => p !== null);
        datasets.push({
          label: curve.label + ' frontier', data: line, ixRole: 'frontier', ixCurve: curve, showLine: true,
          borderColor: color, backgroundColor: color, borderDash: predicted ? [6, 4] : [], pointRadius: 0,
          pointHitRadius: 0, borderWidth: 2, stepped: false,
        });
      }
    }
    return datasets;
  }
  function tooltipLines(context) {
    const point = state.view.points[context.raw.index];
    const lines = [context.dataset.label + ' \u2014 conc ' + point.conc,
      'x ' + formatNumber(context.raw.x) + ', y ' + formatNumber(context.raw.y),
      'tp ' + point.tp + ' ep ' + point.ep + ' dp-attn ' + point.dp_attention + ', ' + point.num_gpus + ' GPUs'];
    if (point.pair !== undefined) {
      const twin = state.view.points[point.pair];
      if (typeof twin.tput_per_gpu === 'number' && typeof point.tput_per_gpu === 'number') {
        const delta = (point.tput_per_gpu / twin.tput_per_gpu - 1) * 100;
        lines.push((twin.kind === 'predicted' ? 'predicted ' : 'measured ') + formatNumber(twin.tput_per_gpu) +
          ' tok/s/GPU (' + (delta >= 0 ? '+' : '') + delta.toFixed(1) + '% here)');
      }
    }
    return lines;
  }
  function chartOptions(chart) {
    return {
      animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
      interaction: { mode: 'nearest', intersect: true },
      onHover: (event, elements, owner) => {
        if (!elements.length) return;
        const dataset = owner.data.datasets[elements[0].datasetIndex];
        if (dataset.ixRole !== 'points') return;
        showDetails(dataset.data[elements[0].index].index);
      },
      plugins: {
        legend: { labels: { filter: (item, data) => data.datasets[item.datasetIndex].ixRole === 'points', boxWidth: 12 } },
        tooltip: { filter: (item) => item.dataset.ixRole === 'points', callbacks: { label: tooltipLines } },
      },
      scales: {
        x: { type: 'linear', title: { display: true, text: chart.x_label } },
        y: { type: 'linear', beginAtZero: true, title: { display: true, text: chart.y_label } },
      },
    };
  }
  function drawChart(chart, curves) {
    let figure = byId('figure-' + chart.id);
    if (!figure) {
      figure = el('figure');
      figure.id = 'figure-' + chart.id;
      figure.appendChild(el('figcaption', null, chart.y_label + ' vs ' + chart.x_label));
      const box = el('div', 'canvas-box');
      const canvas = el('canvas');
      canvas.id = 'chart-' + chart.id;
      box.appendChild(canvas);
      figure.appendChild(box);
      figure.appendChild(el('p', 'empty'));
      byId('charts').appendChild(figure);
    }
    const datasets = datasetsFor(chart, curves);
    const count = datasets.filter((d) => d.ixRole === 'points').reduce((n, d) => n + d.data.length, 0);
    figure.dataset.points = String(count);
    figure.querySelector('.empty').textContent = count === 0 ? 'No points with ' + chart.y_label +
      (chart.id === 'energy' ? ' (no power measured for these results)' : '') +
      (chart.id === 'cost' ? ' (no $/GPU-hour for this hardware: --gpu-hour-cost HW=USD)' : '') : '';
    const existing = state.charts.get(chart.id);
    if (existing) {
      existing.data.datasets = datasets;
      existing.update('none');
      return;
    }
    const canvas = byId('chart-' + chart.id);
    state.charts.set(chart.id, new Chart(canvas, { type: 'scatter', data: { datasets: datasets }, options: chartOptions(chart) }));
  }

  // ---- details ----------------------------------------------------------------------------------
  function artifactHref(path) {
    return isStatic ? 'file://' + encodeURI(path) : '/artifact?path=' + encodeURIComponent(path);
  }
  function clearDetails() {
    byId('details').replaceChildren(el('h2', null, 'Point'),
      el('p', 'muted', 'Hover a point for its configuration and artifacts.'));
  }
  function showDetails(index) {
    const point = state.view.points[index];
    const details = byId('details');
    details.replaceChildren(el('h2', null, point.hw + ' ' + point.framework + ' ' + point.precision + ', conc ' + point.conc));
    const list = el('dl');
    const fields = ['kind', 'model', 'scenario', 'date', 'run_id', 'stem', 'image', 'config_key', 'spec_decoding',
      'disagg', 'tp', 'ep', 'pp', 'dp_attention', 'num_gpus', 'isl', 'osl', 'tput_per_gpu', 'output_tput_per_gpu',
      'median_intvty', 'median_e2el', 'p90_e2el', 'median_ttft', 'p90_ttft', 'median_tpot', 'usd_per_gpu_hour',
      'cost_per_mtok', 'avg_power_w', 'joules_per_total_token', 'joules_per_output_token', 'recipe_fingerprint'];
    for (const field of fields) {
      if (point[field] === null || point[field] === undefined || point[field] === '') continue;
      list.appendChild(el('dt', null, field));
      list.appendChild(el('dd', null, typeof point[field] === 'number' ? formatNumber(point[field]) : point[field]));
    }
    for (const e of point.evals) {
      list.appendChild(el('dt', null, e.task + ' ' + e.filter));
      list.appendChild(el('dd', null, formatNumber(e.value) + ' \u00b1 ' + formatNumber(e.stderr) + ' (n=' + e.n_samples + ')'));
    }
    details.appendChild(list);
    if (point.artifacts.length) {
      details.appendChild(el('h3', null, 'Artifacts'));
      const ul = el('ul');
      for (const artifact of point.artifacts) {
        const li = el('li');
        const link = el('a', null, artifact.kind + ': ' + artifact.path);
        link.href = artifactHref(artifact.path);
        link.target = '_blank';
        link.rel = 'noopener';
        li.appendChild(link);
        ul.appendChild(li);
      }
      details.appendChild(ul);
    }
    if (point.config) {
      details.appendChild(el('h3', null, 'Configuration (matrix row)'));
      details.appendChild(el('pre', null, JSON.stringify(point.config, null, 2)));
    }
  }

  // ---- table and CSV ----------------------------------------------------------------------------
  function tableRows(curves) {
    const rows = [];
    for (const curve of curves) for (const index of curve.points) rows.push(state.view.points[index]);
    rows.sort((a, b) => (a.hw + a.framework + a.precision + a.kind).localeCompare(b.hw + b.framework + b.precision + b.kind) ||
      a.tp - b.tp || a.ep - b.ep || a.conc - b.conc);
    return rows;
  }
  function drawTable(rows) {
    const head = byId('results').querySelector('thead');
    if (!head.firstChild) {
      const tr = el('tr');
      for (const [, title] of COLUMNS) tr.appendChild(el('th', null, title));
      head.appendChild(tr);
    }
    const body = byId('results').querySelector('tbody');
    body.replaceChildren();
    for (const row of rows.slice(0, TABLE_ROWS)) {
      const tr = el('tr', row.kind === 'predicted' ? 'predicted' : null);
      for (const [field] of COLUMNS) tr.appendChild(el('td', null, typeof row[field] === 'number' &&
        !['tp', 'ep', 'num_gpus', 'conc', 'isl', 'osl'].includes(field) ? formatNumber(row[field]) : row[field]));
      body.appendChild(tr);
    }
    byId('table-note').textContent = rows.length > TABLE_ROWS
      ? 'Showing the first ' + TABLE_ROWS + ' of ' + rows.length + ' rows; the CSV holds all of them.'
      : rows.length + ' rows.';
  }
  function csvCell(value) {
    if (value === null || value === undefined) return '';
    let text = String(value);
    if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = "'" + text;  // not a spreadsheet formula
    return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  function toCsv(rows) {
    const lines = [COLUMNS.map(([field]) => field).join(',')];
    for (const row of rows) lines.push(COLUMNS.map(([field]) => csvCell(row[field])).join(','));
    return lines.join('\r\n') + '\r\n';
  }
  function exportCsv() {
    const panel = panelFilter();
    const blob = new Blob([toCsv(state.rows)], { type: 'text/csv;charset=utf-8' });
    const link = el('a');
    link.href = URL.createObjectURL(blob);
    link.download = ('ixbench-' + panel.model + '-' + panel.scenario + '-' + panel.isl + 'x' + panel.osl + '.csv')
      .replace(/[^A-Za-z0-9._-]+/g, '_');
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 0);
  }

  // ---- the whole view ---------------------------------------------------------------------------
  function render() {
    const curves = visibleCurves();
    for (const chart of state.view.charts) drawChart(chart, curves);
    state.rows = tableRows(curves);
    drawTable(state.rows);
    const missing = state.view.missing_costs.filter((hw) => curves.some((c) => c.hw === hw));
    let text = curves.length + ' curves, ' + state.rows.length + ' results.';
    if (missing.length) text += ' No $/GPU-hour for ' + missing.join(', ') + ' (--gpu-hour-cost HW=USD).';
    if (!state.facets.results) text = 'The store holds no results yet: load some with `ixbench ingest DIR`.';
    setStatus(text, false);
    window.ixDashboard.renderedAt = performance.now();  // for bench/dashboard_first_view.mjs
  }

  async function start() {
    byId('csv').addEventListener('click', exportCsv);
    try {
      const facets = isStatic ? embedded.facets : await fetchJson('/api/facets');
      byId('source').textContent = isStatic
        ? 'Static report of ' + embedded.source + ', written ' + embedded.generated_at
        : 'Served from the results store (refresh for new results)';
      setupFilters(facets);
      await loadPanel();
    } catch (error) {
      setStatus(error.message, true);
    }
  }

  window.ixDashboard = { state: state, toCsv: () => toCsv(state.rows), renderedAt: null };
  start();
})();
