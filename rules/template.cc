#include "rules/template.h"

namespace ncclscan {

bool Template::Parse(std::string_view src, Template* out, std::string* err, size_t* err_col) {
  out->parts_.clear();
  std::string lit;
  for (size_t i = 0; i < src.size(); ++i) {
    char c = src[i];
    if (c == '{') {
      if (i + 1 < src.size() && src[i + 1] == '{') {
        lit.push_back('{');
        ++i;
        continue;
      }
      size_t close = src.find('}', i);
      if (close == std::string_view::npos) {
        *err = "unterminated '{' in template";
        *err_col = i;
        return false;
      }
      std::string_view name = src.substr(i + 1, close - i - 1);
      if (name.empty()) {
        *err = "empty variable name '{}' in template";
        *err_col = i;
        return false;
      }
      for (char n : name) {
        if (!((n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z') || (n >= '0' && n <= '9') || n == '_')) {
          *err = "invalid variable name '" + std::string(name) + "' in template";
          *err_col = i + 1;
          return false;
        }
      }
      if (!lit.empty()) out->parts_.push_back(Part{false, std::move(lit)});
      lit.clear();
      out->parts_.push_back(Part{true, std::string(name)});
      i = close;
    } else if (c == '}') {
      if (i + 1 < src.size() && src[i + 1] == '}') ++i;
      lit.push_back('}');
    } else {
      lit.push_back(c);
    }
  }
  if (!lit.empty()) out->parts_.push_back(Part{false, std::move(lit)});
  return true;
}

}  // namespace ncclscan
