#include "rules/literal_matcher.h"

#include <cstring>

namespace ncclscan {

namespace {

uint8_t Lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// The same folding is applied to atoms and text: OR 0x20 lower-cases letters
// (and merges a few punctuation pairs, which only adds verified candidates).
uint32_t Window(const unsigned char* p) { return (p[0] | p[1] << 8 | p[2] << 16) | 0x202020u; }


bool EqualsFolded(const unsigned char* text, const std::string& atom) {
  for (size_t k = 0; k < atom.size(); ++k) {
    if (Lower(text[k]) != static_cast<uint8_t>(atom[k])) return false;
  }
  return true;
}

}  // namespace

int LiteralMatcher::Add(std::string_view atom) {
  std::string a(atom);
  for (char& c : a) c = static_cast<char>(Lower(static_cast<uint8_t>(c)));
  atoms_.push_back(std::move(a));
  return static_cast<int>(atoms_.size()) - 1;
}

void LiteralMatcher::Build() {
  bits_.assign(65536 / 64, 0);
  std::vector<std::vector<int>> buckets(65536);
  short_atoms_.clear();
  for (size_t i = 0; i < atoms_.size(); ++i) {
    const std::string& a = atoms_[i];
    if (a.size() < 3) {
      short_atoms_.push_back(static_cast<int>(i));
      continue;
    }
    uint32_t h = Hash(Window(reinterpret_cast<const unsigned char*>(a.data())));
    bits_[h >> 6] |= uint64_t{1} << (h & 63);
    buckets[h].push_back(static_cast<int>(i));
  }
  bucket_begin_.assign(65537, 0);
  bucket_atoms_.clear();
  for (uint32_t h = 0; h < 65536; ++h) {
    bucket_begin_[h] = static_cast<uint32_t>(bucket_atoms_.size());
    bucket_atoms_.insert(bucket_atoms_.end(), buckets[h].begin(), buckets[h].end());
  }
  bucket_begin_[65536] = static_cast<uint32_t>(bucket_atoms_.size());
}

void LiteralMatcher::FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const {
  if (atoms_.empty()) return;
  seen->resize(atoms_.size());
  const size_t first_new = ids->size();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const uint64_t* bits = bits_.data();
  auto verify = [&](size_t at, uint32_t h) {
    for (uint32_t k = bucket_begin_[h]; k < bucket_begin_[h + 1]; ++k) {
      int id = bucket_atoms_[k];
      const std::string& a = atoms_[id];
      if ((*seen)[id] || a.size() > n - at || !EqualsFolded(p + at, a)) continue;
      (*seen)[id] = 1;
      ids->push_back(id);
    }
  };
  size_t i = 0;
  // Six windows per 8-byte load: the loop is bound by the hash and bit test,
  // not by byte loads.
  for (; i + 8 <= n; i += 6) {
    uint64_t x;
    std::memcpy(&x, p + i, 8);
    x |= 0x2020202020202020ull;
    for (int j = 0; j < 6; ++j) {
      uint32_t h = Hash(static_cast<uint32_t>(x >> (8 * j)) & 0xFFFFFFu);
      if ((bits[h >> 6] >> (h & 63)) & 1) verify(i + j, h);
    }
  }
  for (; i + 3 <= n; ++i) {
    uint32_t h = Hash(Window(p + i));
    if ((bits[h >> 6] >> (h & 63)) & 1) verify(i, h);
  }
  for (int id : short_atoms_) {
    const std::string& a = atoms_[id];
    for (size_t k = 0; k + a.size() <= n; ++k) {
      if (EqualsFolded(p + k, a)) {
        (*seen)[id] = 1;
        ids->push_back(id);
        break;
      }
    }
  }
  for (size_t k = first_new; k < ids->size(); ++k) (*seen)[(*ids)[k]] = 0;
}

}  // namespace ncclscan
