#include "report/dashboard_page.h"

#include <string_view>
#include <utility>

#include "common/strings.h"
#include "report/dashboard_data.h"
#include "report/web_assets.h"

namespace ix::report {

std::string render_dashboard_page(const PageOptions& options) {
  const std::string_view page = embedded_dashboard_html();
  const std::string data = options.data_json.empty() ? std::string("null") : json_for_script(options.data_json);
  const std::pair<std::string_view, std::string> slots[] = {
      {"{{TITLE}}", html_escape(options.title)},
      {"{{STYLE}}", embedded_dashboard_css()},
      {"{{CHART_JS}}", embedded_chart_js()},
      {"{{APP_JS}}", embedded_dashboard_js()},
      {"{{DATA}}", data},
  };
  // One pass over the template: what a slot inserts is never searched again.
  std::string out;
  out.reserve(page.size() + data.size() + 300'000);
  size_t at = 0;
  while (at < page.size()) {
    const size_t open = page.find("{{", at);
    if (open == std::string_view::npos) break;
    out.append(page.substr(at, open - at));
    at = open;
    bool filled = false;
    for (const auto& [slot, value] : slots) {
      if (page.substr(open).starts_with(slot)) {
        out += value;
        at = open + slot.size();
        filled = true;
        break;
      }
    }
    if (!filled) {
      out += "{{";
      at = open + 2;
    }
  }
  out.append(page.substr(at));
  return out;
}

}  // namespace ix::report
