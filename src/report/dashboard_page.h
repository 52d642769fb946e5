// The dashboard's one HTML page: web/dashboard.html with its stylesheet, Chart.js and the page's
// script inlined, so a static report is one file and the served page needs no other request but
// its data. In a static report the data (facets and the whole view) is inlined too, as JSON in a
// <script type="application/json"> element, escaped for it (json_for_script): nothing from the
// store can close the element or run. The page builds every element with textContent.
//
// Thread-safety: plain functions.
#pragma once

#include <string>

namespace ix::report {

struct PageOptions {
  std::string title = "ixbench results";
  // Static report: {"facets": ..., "view": ..., "generated_at": ..., "source": ...} as JSON text.
  // Empty: the served dashboard (the page asks /api/facets and /api/view).
  std::string data_json;
};

std::string render_dashboard_page(const PageOptions& options);

}  // namespace ix::report
