// Template: "{name}" interpolation used by facts, identity and finding texts.
// "{{" and "}}" are literal braces. Parsed once at load; Render() does no parsing.
//
// Thread-safety: immutable after Parse(); Render() is const.
#ifndef NCCLSCAN_RULES_TEMPLATE_H_
#define NCCLSCAN_RULES_TEMPLATE_H_

#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

class Template {
 public:
  struct Part {
    bool is_var;
    std::string text;  // literal text, or the variable name
    int capture = -1;  // a variable that is a plain capture: its group (set by the rule compiler)
  };

  // Returns false with *err and *err_col (0-based offset into src) on a syntax error.
  static bool Parse(std::string_view src, Template* out, std::string* err, size_t* err_col);

  const std::vector<Part>& parts() const { return parts_; }
  bool empty() const { return parts_.empty(); }
  // Single variable and nothing else ("{status}"): the value can be taken as is.
  bool IsSingleVar() const { return parts_.size() == 1 && parts_[0].is_var; }
  // The capture group a single-variable template reads directly (set by the
  // rule compiler; -1 when the variable is a lookup or the template is more).
  int single_capture() const { return single_capture_; }
  void set_single_capture(int group) { single_capture_ = group; }
  // Binds variable part `i` to capture group `group` (rendering then skips the name lookup).
  void set_part_capture(size_t i, int group) { parts_[i].capture = group; }

  template <typename Lookup>
  void RenderTo(std::string* out, Lookup&& lookup) const {
    for (const Part& p : parts_) {
      if (p.is_var)
        lookup(p.text, out);
      else
        out->append(p.text);
    }
  }
  template <typename Lookup>
  std::string Render(Lookup&& lookup) const {
    std::string out;
    RenderTo(&out, lookup);
    return out;
  }

 private:
  std::vector<Part> parts_;
  int single_capture_ = -1;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_TEMPLATE_H_
