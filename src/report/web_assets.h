// The dashboard's page parts and data, compiled in from web/, node_modules/chart.js and
// data/report/ by embed_web_assets.cmake, so `report` and `dashboard` need nothing at run time (no
// CDN, no files beside the binary).
#pragma once

namespace ix::report {

const char* embedded_dashboard_html();  // web/dashboard.html, with {{...}} slots
const char* embedded_dashboard_css();   // web/dashboard.css
const char* embedded_dashboard_js();    // web/dashboard.js
const char* embedded_chart_js();        // node_modules/chart.js/dist/chart.umd.min.js (MIT)
const char* embedded_gpu_hour_cost_json();

}  // namespace ix::report
