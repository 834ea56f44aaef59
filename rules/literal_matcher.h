// LiteralMatcher: Aho-Corasick over the prefilter atoms of all rules, matched
// case-insensitively (RE2's FilteredRE2 atoms are lower-case). One pass over a
// line reports every atom it contains; only rules whose atoms are present are
// then run through RE2.
//
// Thread-safety: immutable after Build(); FindAll() is const.
#ifndef NCCLSCAN_RULES_LITERAL_MATCHER_H_
#define NCCLSCAN_RULES_LITERAL_MATCHER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

class LiteralMatcher {
 public:
  // Returns the atom's id (ids are dense, in insertion order).
  int Add(std::string_view atom);
  void Build();
  size_t size() const { return num_atoms_; }

  // Appends the ids of atoms found in text (each at most once) to *ids.
  // `seen` is caller scratch sized size(); entries are reset before returning.
  void FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int>> next;  // build-time sparse edges (class, node)
    int fail = 0;
    std::vector<int> out;
  };
  std::vector<Node> nodes_{1};
  size_t num_atoms_ = 0;
  uint8_t class_of_[256] = {};
  int num_classes_ = 1;  // class 0 = bytes in no atom
  std::vector<int32_t> delta_;      // dense transitions [state * num_classes_ + class]
  std::vector<int32_t> out_begin_;  // outputs of state s: out_ids_[out_begin_[s] .. out_begin_[s+1])
  std::vector<int32_t> out_ids_;
  bool built_ = false;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_LITERAL_MATCHER_H_
