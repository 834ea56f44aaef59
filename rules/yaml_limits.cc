#include "rules/yaml_limits.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <vector>

namespace ncclscan {

namespace {

std::string Amount(size_t bytes) {
  if (bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// Thrown out of the event handler to stop the parse at the first limit crossed.
struct LimitCrossed {};

class Measure : public YAML::EventHandler {
 public:
  Measure(const std::string& name, const YamlLimits& limits, YamlLimitError* err)
      : name_(name), limits_(limits), err_(err) {}

  void OnDocumentStart(const YAML::Mark&) override {
    // Anchors are per document (yaml-cpp numbers them from 1 in each); the
    // totals are per file.
    anchors_.clear();
    stack_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, Size{1, 0}); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    // yaml-cpp rejects an alias of an unknown anchor itself.
    Size s = anchor < anchors_.size() ? anchors_[anchor] : Size{1, 0};
    Leaf(mark, 0, s);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    Leaf(mark, anchor, Size{1, value.size()});
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Size {
    size_t nodes = 0;
    size_t bytes = 0;
  };
  struct Frame {
    YAML::anchor_t anchor;
    Size size;  // the collection so far, itself included
  };

  // Every size recorded is below the limits (it was added to the totals, which
  // are checked at each step), so these sums cannot overflow.
  void Add(const YAML::Mark& mark, Size s) {
    nodes_ += s.nodes;
    bytes_ += s.bytes;
    if (nodes_ > limits_.max_nodes) {
      Fail(mark, "E-YAML-TOO-LARGE",
           "the rule file expands to more than " + std::to_string(limits_.max_nodes) + " YAML nodes");
    }
    if (bytes_ > limits_.max_scalar_bytes) {
      Fail(mark, "E-YAML-TOO-LARGE",
           "the rule file expands to more than " + Amount(limits_.max_scalar_bytes) + " of text");
    }
    if (!stack_.empty()) {
      stack_.back().size.nodes += s.nodes;
      stack_.back().size.bytes += s.bytes;
    }
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, Size s) {
    Add(mark, s);
    Remember(anchor, s);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      Fail(mark, "E-YAML-TOO-DEEP", "YAML nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    Add(mark, Size{1, 0});
    stack_.push_back(Frame{anchor, Size{1, 0}});
  }
  void Close() {
    Frame f = stack_.back();
    stack_.pop_back();
    if (!stack_.empty()) {
      stack_.back().size.nodes += f.size.nodes;
      stack_.back().size.bytes += f.size.bytes;
    }
    Remember(f.anchor, f.size);
  }
  void Remember(YAML::anchor_t anchor, Size s) {
    if (anchor == YAML::NullAnchor) return;
    if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
    anchors_[anchor] = s;
  }
  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& code, const std::string& message) {
    err_->pos = SourcePos{name_, mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0};
    err_->code = code;
    err_->message = message;
    err_->help = code == "E-YAML-TOO-DEEP"
                     ? "rule files nest a few levels (rules: - finding: ...); this looks generated or hostile"
                     : "an alias (*name) counts its whole anchored value again at each use; a rule file needs far "
                       "less";
    throw LimitCrossed();
  }

  const std::string& name_;
  const YamlLimits& limits_;
  YamlLimitError* err_;
  std::vector<Frame> stack_;
  std::vector<Size> anchors_;  // by anchor id
  size_t nodes_ = 0;
  size_t bytes_ = 0;
};

}  // namespace

bool WithinYamlLimits(const std::string& name, const std::string& text, const YamlLimits& limits, YamlLimitError* err) {
  if (text.size() > limits.max_bytes) {
    err->pos = SourcePos{name, 0, 0};
    err->code = "E-FILE-TOO-BIG";
    err->message = "rule file is larger than " + Amount(limits.max_bytes);
    err->help = "";
    return false;
  }
  std::istringstream in(text);
  Measure measure(name, limits, err);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(measure)) {
    }
  } catch (const LimitCrossed&) {
    return false;
  } catch (const YAML::Exception&) {
    return true;  // reported by the parse proper, with its position
  }
  return true;
}

}  // namespace ncclscan
