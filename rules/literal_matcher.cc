#include "rules/literal_matcher.h"

#include <algorithm>
#include <cctype>
#include <deque>

namespace ncclscan {

namespace {
uint8_t Lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
}  // namespace

int LiteralMatcher::Add(std::string_view atom) {
  // Classes are assigned lazily to the lower-cased bytes that appear in atoms.
  int node = 0;
  for (char ch : atom) {
    uint8_t c = Lower(static_cast<uint8_t>(ch));
    if (class_of_[c] == 0) {
      class_of_[c] = static_cast<uint8_t>(num_classes_++);
    }
    uint8_t cls = class_of_[c];
    int child = -1;
    for (auto& e : nodes_[node].next) {
      if (e.first == cls) { child = e.second; break; }
    }
    if (child < 0) {
      child = static_cast<int>(nodes_.size());
      nodes_[node].next.push_back({cls, child});
      nodes_.emplace_back();
    }
    node = child;
  }
  int id = static_cast<int>(num_atoms_++);
  nodes_[node].out.push_back(id);
  return id;
}

void LiteralMatcher::Build() {
  // Upper-case bytes share their lower-case class.
  for (int c = 'A'; c <= 'Z'; ++c) class_of_[c] = class_of_[c + 32];
  const int nc = num_classes_;
  delta_.assign(nodes_.size() * nc, 0);
  std::deque<int> queue;
  for (auto& e : nodes_[0].next) {
    delta_[e.first] = e.second;
    nodes_[e.second].fail = 0;
    queue.push_back(e.second);
  }
  while (!queue.empty()) {
    int s = queue.front();
    queue.pop_front();
    const Node& n = nodes_[s];
    // Inherit outputs of the fail state (already final: BFS order).
    auto& out = nodes_[s].out;
    const auto& fo = nodes_[n.fail].out;
    out.insert(out.end(), fo.begin(), fo.end());
    for (int cls = 0; cls < nc; ++cls) delta_[s * nc + cls] = delta_[n.fail * nc + cls];
    for (auto& e : n.next) {
      int child = e.second;
      nodes_[child].fail = s == 0 ? 0 : delta_[n.fail * nc + e.first];
      delta_[s * nc + e.first] = child;
      queue.push_back(child);
    }
  }
  out_begin_.assign(nodes_.size() + 1, 0);
  out_ids_.clear();
  for (size_t s = 0; s < nodes_.size(); ++s) {
    out_begin_[s] = static_cast<int32_t>(out_ids_.size());
    std::sort(nodes_[s].out.begin(), nodes_[s].out.end());
    nodes_[s].out.erase(std::unique(nodes_[s].out.begin(), nodes_[s].out.end()), nodes_[s].out.end());
    out_ids_.insert(out_ids_.end(), nodes_[s].out.begin(), nodes_[s].out.end());
  }
  out_begin_[nodes_.size()] = static_cast<int32_t>(out_ids_.size());
  // Build-time structure is no longer needed.
  for (auto& n : nodes_) {
    std::vector<std::pair<uint8_t, int>>().swap(n.next);
    std::vector<int>().swap(n.out);
  }
  built_ = true;
}

void LiteralMatcher::FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const {
  if (!built_ || num_atoms_ == 0) return;
  seen->resize(num_atoms_);
  const int nc = num_classes_;
  const int32_t* delta = delta_.data();
  const int32_t* ob = out_begin_.data();
  size_t first_new = ids->size();
  int s = 0;
  for (unsigned char c : text) {
    s = delta[s * nc + class_of_[c]];
    int b = ob[s], e = ob[s + 1];
    for (int k = b; k < e; ++k) {
      int id = out_ids_[k];
      if (!(*seen)[id]) {
        (*seen)[id] = 1;
        ids->push_back(id);
      }
    }
  }
  for (size_t k = first_new; k < ids->size(); ++k) (*seen)[(*ids)[k]] = 0;
}

}  // namespace ncclscan
