#include "rules/literal_matcher.h"

#include <algorithm>
#include <cstring>

namespace ncclscan {

namespace {

uint8_t Lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// The same folding is applied to atoms and text: OR 0x20 lower-cases letters
// (and merges a few punctuation pairs, which only adds verified candidates).
// 12-bit hash: the shift table (4 KiB) stays in L1. The scan is a chain of
// dependent loads (the next position depends on this shift), so a 64 KiB table
// that lives in L2 made it several times slower despite fewer collisions.
constexpr uint32_t kHashBits = 12;
constexpr uint32_t kTableSize = 1u << kHashBits;
uint32_t BlockHash(const unsigned char* p) {
  uint32_t w = (p[0] | p[1] << 8 | p[2] << 16) | 0x202020u;
  return (w * 0x9E3779B1u) >> (32 - kHashBits);
}

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
  tiny_atoms_.clear();
  m_ = 0;
  for (size_t i = 0; i < atoms_.size(); ++i) {
    size_t n = atoms_[i].size();
    if (n < kBlock) tiny_atoms_.push_back(static_cast<int>(i));
    else if (m_ == 0 || n < m_) m_ = n;
  }
  m_ = std::min<size_t>(m_, 255);
  const uint8_t def = static_cast<uint8_t>(m_ >= kBlock ? m_ - kBlock + 1 : 1);
  shift_.assign(kTableSize, def);
  std::vector<std::vector<int>> buckets(kTableSize);
  for (size_t i = 0; i < atoms_.size(); ++i) {
    const auto* a = reinterpret_cast<const unsigned char*>(atoms_[i].data());
    if (atoms_[i].size() < kBlock) continue;
    // Blocks of the atom's m-byte prefix; the last one has shift 0.
    for (size_t q = kBlock - 1; q < m_; ++q) {
      uint32_t h = BlockHash(a + q - (kBlock - 1));
      shift_[h] = std::min<uint8_t>(shift_[h], static_cast<uint8_t>(m_ - 1 - q));
    }
    buckets[BlockHash(a + m_ - kBlock)].push_back(static_cast<int>(i));
  }
  bucket_begin_.assign(kTableSize + 1, 0);
  bucket_atoms_.clear();
  for (uint32_t h = 0; h < kTableSize; ++h) {
    bucket_begin_[h] = static_cast<uint32_t>(bucket_atoms_.size());
    bucket_atoms_.insert(bucket_atoms_.end(), buckets[h].begin(), buckets[h].end());
  }
  bucket_begin_[kTableSize] = static_cast<uint32_t>(bucket_atoms_.size());
}

void LiteralMatcher::FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const {
  if (atoms_.empty()) return;
  seen->resize(atoms_.size());
  const size_t first_new = ids->size();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  if (m_ >= kBlock && n >= m_) {
    const uint8_t* shift = shift_.data();
    size_t pos = m_ - 1;  // last byte of the window
    while (pos < n) {
      uint32_t h = BlockHash(p + pos - (kBlock - 1));
      uint8_t s = shift[h];
      if (s) {
        pos += s;
        continue;
      }
      const size_t start = pos + 1 - m_;
      for (uint32_t k = bucket_begin_[h]; k < bucket_begin_[h + 1]; ++k) {
        int id = bucket_atoms_[k];
        const std::string& a = atoms_[id];
        if ((*seen)[id] || a.size() > n - start || !EqualsFolded(p + start, a)) continue;
        (*seen)[id] = 1;
        ids->push_back(id);
      }
      ++pos;
    }
  }
  for (int id : tiny_atoms_) {
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
