#include "rules/literal_matcher.h"

#include <algorithm>
#include <cstring>
#include <map>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace ncclscan {

namespace {

uint8_t Lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
uint8_t Upper(uint8_t c) { return (c >= 'a' && c <= 'z') ? c - 32 : c; }

bool EqualsFolded(const unsigned char* text, const std::string& atom) {
  for (size_t k = 0; k < atom.size(); ++k) {
    if (Lower(text[k]) != static_cast<uint8_t>(atom[k])) return false;
  }
  return true;
}

// The same, 8 bytes at a time: `fold` has 0x20 at the atom's letters, and
// (c | 0x20) equals a lower-case letter only when c is that letter in either
// case, so OR-ing then comparing is exact.
bool EqualsFoldedWords(const unsigned char* text, const std::string& atom, const std::string& fold) {
  const size_t m = atom.size();
  size_t k = 0;
  for (; k + 8 <= m; k += 8) {
    uint64_t t, a, f;
    std::memcpy(&t, text + k, 8);
    std::memcpy(&a, atom.data() + k, 8);
    std::memcpy(&f, fold.data() + k, 8);
    if ((t | f) != a) return false;
  }
  for (; k < m; ++k) {
    if ((text[k] | static_cast<uint8_t>(fold[k])) != static_cast<uint8_t>(atom[k])) return false;
  }
  return true;
}

constexpr uint64_t kFold = 0x2020202020202020ull;

uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint64_t SlotHash(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }

}  // namespace

int LiteralMatcher::Add(std::string_view atom) {
  std::string a(atom);
  for (char& c : a) c = static_cast<char>(Lower(static_cast<uint8_t>(c)));
  atoms_.push_back(std::move(a));
  return static_cast<int>(atoms_.size()) - 1;
}

void LiteralMatcher::Build() {
  empty_atoms_.clear();
  short_atoms_.clear();
  long_atoms_.clear();
  folds_.clear();
  for (const std::string& a : atoms_) {
    std::string f(a.size(), '\0');
    for (size_t k = 0; k < a.size(); ++k) f[k] = (a[k] >= 'a' && a[k] <= 'z') ? 0x20 : 0;
    folds_.push_back(std::move(f));
  }
  std::vector<int> longs;
  for (size_t i = 0; i < atoms_.size(); ++i) {
    const int id = static_cast<int>(i);
    if (atoms_[i].empty()) empty_atoms_.push_back(id);
    else if (atoms_[i].size() < kPositions) short_atoms_.push_back(id);
    else longs.push_back(id);
  }

  // Buckets: short atoms constrain few positions and fire often, so they get
  // their own bucket; long atoms are sorted by fingerprint (atoms with the same
  // letters at the same positions keep a bucket sharp) and cut into equal runs.
  std::stable_sort(longs.begin(), longs.end(),
                   [&](int x, int y) { return atoms_[x].compare(0, kPositions, atoms_[y], 0, kPositions) < 0; });
  std::vector<std::vector<int>> buckets(kBuckets);
  const int first_long = short_atoms_.empty() ? 0 : 1;
  if (!short_atoms_.empty()) buckets[0] = short_atoms_;
  for (size_t k = 0; k < longs.size(); ++k) {
    buckets[first_long + k * (kBuckets - first_long) / longs.size()].push_back(longs[k]);
  }
  short_buckets_ = short_atoms_.empty() ? 0 : 1;

  table_.assign(kTableSize, ~uint64_t{0});
  const uint32_t next_mask = (1u << kNextBits) - 1;
  for (int b = 0; b < kBuckets; ++b) {
    for (int id : buckets[b]) {
      const std::string& a = atoms_[id];
      const size_t fp = std::min<size_t>(a.size(), kPositions);
      const size_t wild = kPositions - fp;  // leading positions that accept anything
      for (size_t j = 0; j < kPositions; ++j) {
        const uint64_t bit = uint64_t{1} << (8 * j + b);
        if (j < wild) {
          for (uint64_t& t : table_) t &= ~bit;
          continue;
        }
        const size_t k = j - wild;
        const uint8_t c = static_cast<uint8_t>(a[k]);
        // The next byte's low bits do not depend on its case; past the atom's
        // end any next byte is accepted.
        for (uint32_t nb = 0; nb <= next_mask; ++nb) {
          if (k + 1 < a.size() && nb != (static_cast<uint8_t>(a[k + 1]) & next_mask)) continue;
          table_[c | nb << 8] &= ~bit;
          table_[Upper(c) | nb << 8] &= ~bit;
        }
      }
    }
  }

  // Confirmation table for long atoms, keyed by their folded first 8 bytes.
  std::map<uint64_t, std::vector<int>> by_key;
  for (int id : longs) by_key[Load64(reinterpret_cast<const unsigned char*>(atoms_[id].data())) | kFold].push_back(id);
  size_t cap = 16;
  while (cap < by_key.size() * 4) cap *= 2;
  slot_shift_ = 64 - __builtin_ctzll(cap);
  slots_.assign(cap, Slot());
  for (const auto& [key, ids] : by_key) {
    size_t h = SlotHash(key) >> slot_shift_;
    while (slots_[h].key) h = (h + 1) & (cap - 1);
    slots_[h].key = key;
    slots_[h].begin = static_cast<uint32_t>(long_atoms_.size());
    long_atoms_.insert(long_atoms_.end(), ids.begin(), ids.end());
    slots_[h].end = static_cast<uint32_t>(long_atoms_.size());
  }
}

void LiteralMatcher::Report(int id, std::vector<int>* ids, std::vector<uint8_t>* seen) const {
  (*seen)[id] = 1;
  ids->push_back(id);
}

void LiteralMatcher::Confirm(const unsigned char* p, size_t n, size_t end, uint32_t buckets, std::vector<int>* ids,
                             std::vector<uint8_t>* seen) const {
  if (buckets & short_buckets_) {
    for (int id : short_atoms_) {
      const std::string& a = atoms_[id];
      if ((*seen)[id] || end + 1 < a.size()) continue;
      if (EqualsFolded(p + end + 1 - a.size(), a)) Report(id, ids, seen);
    }
  }
  if ((buckets & ~short_buckets_) && end + 1 >= kPositions) {
    const size_t start = end + 1 - kPositions;
    const uint64_t key = Load64(p + start) | kFold;
    for (size_t h = SlotHash(key) >> slot_shift_; slots_[h].key; h = (h + 1) & (slots_.size() - 1)) {
      if (slots_[h].key != key) continue;
      for (uint32_t k = slots_[h].begin; k < slots_[h].end; ++k) {
        int id = long_atoms_[k];
        const std::string& a = atoms_[id];
        if (!(*seen)[id] && a.size() <= n - start && EqualsFoldedWords(p + start, a, folds_[id])) {
          Report(id, ids, seen);
        }
      }
      break;
    }
  }
}

#ifdef __SSE2__
namespace {

// x << 8*(8 - J) bytes, as a 128-bit value (J = 0..7): the block formulation below.
template <int J>
__m128i Place(const uint64_t* table, uint32_t idx) {
  return _mm_slli_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(table + idx)), 8 - J);
}

}  // namespace
#endif

void LiteralMatcher::FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const {
  if (atoms_.empty()) return;
  seen->resize(atoms_.size());
  const size_t first_new = ids->size();
  for (int id : empty_atoms_) Report(id, ids, seen);
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const uint64_t* table = table_.data();
  auto confirm_byte = [&](size_t end, uint64_t top_bytes_inverted) {
    uint32_t hit = static_cast<uint32_t>(top_bytes_inverted) & 0xFF;
    if (hit) Confirm(p, n, end, hit, ids, seen);
  };
  // The state after byte p is D_p = OR_{m<8} table[p-m] << 8m, and a bucket's
  // fingerprint may end at p iff the top byte of D_p has its bit clear. The
  // serial form D = (D << 8) | table[...] costs a shift+OR latency per byte;
  // here 8 bytes are done at once without that chain: with
  //   S = OR_{j<8} table[i+j] << 8*(8-j)     (128 bits)
  // the top byte of D_{i+k} is byte 7-k of  hi64(S) | lo64(S of the previous 8).
  // The state starts as "every prefix matched" (carry 0): positions before the
  // text act as wildcards, which only adds candidates (Confirm checks bounds).
  uint64_t carry = 0;
  // One step: the 8 ends at `at`, of which the first `ends` are reported; q
  // points at the step's bytes and one more (the super-characters' next byte).
  auto step = [&](const unsigned char* q, size_t at, size_t ends) {
    auto super = [q](int j) -> uint32_t {
      uint16_t w;
      std::memcpy(&w, q + j, 2);
      return w & (kTableSize - 1);
    };
#ifdef __SSE2__
    __m128i s01 = _mm_or_si128(Place<0>(table, super(0)), Place<1>(table, super(1)));
    __m128i s23 = _mm_or_si128(Place<2>(table, super(2)), Place<3>(table, super(3)));
    __m128i s45 = _mm_or_si128(Place<4>(table, super(4)), Place<5>(table, super(5)));
    __m128i s67 = _mm_or_si128(Place<6>(table, super(6)), Place<7>(table, super(7)));
    __m128i s = _mm_or_si128(_mm_or_si128(s01, s23), _mm_or_si128(s45, s67));
    const uint64_t hi = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_srli_si128(s, 8)));
    const uint64_t lo = static_cast<uint64_t>(_mm_cvtsi128_si64(s));
#else
    uint64_t hi = table[super(0)], lo = 0;
    for (int j = 1; j < 8; ++j) {
      hi |= table[super(j)] >> (8 * j);
      lo |= table[super(j)] << (8 * (8 - j));
    }
#endif
    const uint64_t verdict = hi | carry;
    carry = lo;
    if (verdict == ~uint64_t{0}) return;
    for (size_t k = 0; k < ends; ++k) confirm_byte(at + k, ~verdict >> (8 * (7 - k)));
  };
  size_t i = 0;
  for (; i + 9 <= n; i += 8) step(p + i, i, 8);
  if (i < n) {
    // The last 1..8 bytes, zero-padded: a padding byte only affects ends at or
    // after itself, which are not reported, and a zero next byte is what the
    // text's last byte has anyway (no atom continues past the text).
    unsigned char tail[16] = {};
    std::memcpy(tail, p + i, n - i);
    step(tail, i, n - i);
  }
  for (size_t k = first_new; k < ids->size(); ++k) (*seen)[(*ids)[k]] = 0;
}

}  // namespace ncclscan
