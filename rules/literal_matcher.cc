#include "rules/literal_matcher.h"

#include <algorithm>
#include <cstring>
#include <map>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "parsers/text_util.h"

namespace ncclscan {

namespace {

uint8_t Lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
uint8_t Upper(uint8_t c) { return (c >= 'a' && c <= 'z') ? c - 32 : c; }

// Short atoms are looked up by their last two bytes, folded (TailKey).
constexpr int kTailBits = 12;
uint32_t TailKey(uint8_t a, uint8_t b) {
  return ((static_cast<uint32_t>(Lower(a)) * 131u) ^ Lower(b)) & ((1u << kTailBits) - 1);
}

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
    if (atoms_[i].empty())
      empty_atoms_.push_back(id);
    else if (atoms_[i].size() < kWindow)
      short_atoms_.push_back(id);
    else
      longs.push_back(id);
  }

  // Groups: short atoms constrain few positions and fire often, so they get
  // their own group; long atoms are sorted by fingerprint (atoms with the same
  // letters at the same positions keep a group sharp) and cut into equal runs.
  std::stable_sort(longs.begin(), longs.end(),
                   [&](int x, int y) { return atoms_[x].compare(0, kWindow, atoms_[y], 0, kWindow) < 0; });
  std::vector<std::vector<int>> groups(kGroups);
  const int first_long = short_atoms_.empty() ? 0 : 1;
  if (!short_atoms_.empty()) groups[0] = short_atoms_;
  for (size_t k = 0; k < longs.size(); ++k) {
    groups[first_long + k * (kGroups - first_long) / longs.size()].push_back(longs[k]);
  }
  short_buckets_ = short_atoms_.empty() ? 0 : 1;
  // A candidate end checks only the short atoms ending in its two bytes (an
  // atom of one byte is checked at every candidate).
  short_one_.clear();
  std::vector<std::pair<uint32_t, int32_t>> tails;
  for (int id : short_atoms_) {
    const std::string& a = atoms_[id];
    if (a.size() < 2)
      short_one_.push_back(id);
    else
      tails.emplace_back(TailKey(a[a.size() - 2], a[a.size() - 1]), id);
  }
  std::stable_sort(tails.begin(), tails.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  short_by_tail_.clear();
  tail_begin_.assign((1u << kTailBits) + 1, 0);
  for (const auto& [key, id] : tails) {
    short_by_tail_.push_back(id);
    ++tail_begin_[key + 1];
  }
  for (size_t k = 1; k < tail_begin_.size(); ++k) tail_begin_[k] += tail_begin_[k - 1];

  // The table: for each alignment a (the fingerprint ends a bytes after the
  // sample) and position j (the sample 2*(3-j) bytes before the newest one),
  // clear bucket (b + 8a)'s bit for the super-characters the atom accepts at
  // its window byte w = 7 - a - 2*(3-j).
  table_.assign(kTableSize, ~uint64_t{0});
  const uint32_t next_mask = (1u << kNextBits) - 1;
  for (int g = 0; g < kGroups; ++g) {
    for (int id : groups[g]) {
      const std::string& a = atoms_[id];
      const int fp = static_cast<int>(std::min<size_t>(a.size(), kWindow));
      for (int align = 0; align < kStride; ++align) {
        for (int j = 0; j < kPositions; ++j) {
          const uint64_t bit = uint64_t{1} << (kBucketBits * j + g + kGroups * align);
          const int w = kWindow - 1 - align - kStride * (kPositions - 1 - j);
          const int k = w - (kWindow - fp);  // atom index of window byte w
          // The byte itself: the atom's, or any (before the atom). The next
          // byte's low bits: the atom's next byte, past the fingerprint the
          // atom's continuation when it has one, or any.
          const int next = k + 1;
          const bool next_known = next >= 0 && static_cast<size_t>(next) < a.size();
          for (uint32_t nb = 0; nb <= next_mask; ++nb) {
            if (next_known && nb != (static_cast<uint8_t>(a[next]) & next_mask)) continue;
            if (k < 0) {
              for (uint32_t c = 0; c < 256; ++c) table_[c | nb << 8] &= ~bit;
            } else {
              const uint8_t c = static_cast<uint8_t>(a[k]);
              table_[c | nb << 8] &= ~bit;
              table_[Upper(c) | nb << 8] &= ~bit;
            }
          }
        }
      }
    }
  }

  // The state before the text: samples there match only positions that accept
  // anything (before a short atom), so no fingerprint seems to end in the
  // first bytes unless it can.
  uint64_t before = 0;
  for (uint64_t t : table_) before |= t;
  initial_carry_ = 0;
  for (int j = 1; j < kPositions; ++j) initial_carry_ |= before << (64 - kBucketBits * j);

  // Confirmation table for long atoms, keyed by their folded first 8 bytes.
  std::map<uint64_t, std::vector<int>> by_key;
  for (int id : longs) by_key[Load64(reinterpret_cast<const unsigned char*>(atoms_[id].data())) | kFold].push_back(id);
  size_t cap = 16;
  while (cap < by_key.size() * 4) cap *= 2;
  slot_shift_ = 64 - __builtin_ctzll(cap);
  slots_.assign(cap, Slot());
  for (const auto& [key, ids] : by_key) {
    size_t h = SpreadBits(key) >> slot_shift_;
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
    auto check = [&](int id) {
      const std::string& a = atoms_[id];
      if (!(*seen)[id] && end + 1 >= a.size() && EqualsFolded(p + end + 1 - a.size(), a)) Report(id, ids, seen);
    };
    if (end >= 1) {
      const uint32_t key = TailKey(p[end - 1], p[end]);
      for (uint32_t k = tail_begin_[key]; k < tail_begin_[key + 1]; ++k) check(short_by_tail_[k]);
    }
    for (int id : short_one_) check(id);
  }
  if ((buckets & ~short_buckets_) && end + 1 >= kWindow) {
    const size_t start = end + 1 - kWindow;
    const uint64_t key = Load64(p + start) | kFold;
    for (size_t h = SpreadBits(key) >> slot_shift_; slots_[h].key; h = (h + 1) & (slots_.size() - 1)) {
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

// table[idx] << 16*(4 - J) bits, as a 128-bit value (J = 0..3): the block
// formulation below.
template <int J>
__m128i Place(const uint64_t* table, uint32_t idx) {
  return _mm_slli_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(table + idx)), 8 - 2 * J);
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
  // Samples are the super-characters at even offsets x. After sample x the
  // state is D_x = OR_{t<4} table[x - 2t] << 16t, and its top 16 bits have
  // bucket bit (b + 8a) clear iff a group-b fingerprint may end at x + a.
  // Four samples are done at once without a shift-OR chain: with
  //   S = OR_{j<4} table[x+2j] << 16*(4-j)     (128 bits)
  // the top field of D_{x+2k} is 16-bit lane 3-k of hi64(S) | lo64(S of the
  // previous step). Before the text, samples match only wildcards.
  uint64_t carry = initial_carry_;
  // One block: the 4 samples at q[0], q[2], q[4], q[6] -> hi64(S), lo64(S);
  // q has one more byte (the last super-character's next byte).
  auto block = [table](const unsigned char* q, uint64_t* lo) -> uint64_t {
    auto super = [q](int j) -> uint32_t {
      uint16_t w;
      std::memcpy(&w, q + kStride * j, 2);
      return w & (kTableSize - 1);
    };
#ifdef __SSE2__
    __m128i s01 = _mm_or_si128(Place<0>(table, super(0)), Place<1>(table, super(1)));
    __m128i s23 = _mm_or_si128(Place<2>(table, super(2)), Place<3>(table, super(3)));
    __m128i s = _mm_or_si128(s01, s23);
    *lo = static_cast<uint64_t>(_mm_cvtsi128_si64(s));
    return static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_srli_si128(s, 8)));
#else
    uint64_t hi = table[super(0)];
    *lo = 0;
    for (int j = 1; j < kPositions; ++j) {
      hi |= table[super(j)] >> (kBucketBits * j);
      *lo |= table[super(j)] << (64 - kBucketBits * j);
    }
    return hi;
#endif
  };
  // Confirms the candidates of a block's verdict (samples at `at`...), ends
  // before `limit` only.
  auto report = [&](uint64_t verdict, size_t at, size_t limit) {
    for (int k = 0; k < kPositions; ++k) {
      const uint32_t hit = static_cast<uint32_t>(~verdict >> (kBucketBits * (kPositions - 1 - k)));
      const size_t end = at + kStride * k;
      if ((hit & 0xFF) && end < limit) Confirm(p, n, end, hit & 0xFF, ids, seen);
      if ((hit & 0xFF00) && end + 1 < limit) Confirm(p, n, end + 1, (hit >> 8) & 0xFF, ids, seen);
    }
  };
  constexpr size_t kStep = kStride * kPositions;  // text bytes per block
  size_t i = 0;
  // Two blocks per branch: most of the text has no candidate at all.
  for (; i + 2 * kStep <= n; i += 2 * kStep) {
    uint64_t lo1, lo2;
    const uint64_t v1 = block(p + i, &lo1) | carry;
    const uint64_t v2 = block(p + i + kStep, &lo2) | lo1;
    carry = lo2;
    if ((v1 & v2) == ~uint64_t{0}) continue;
    if (v1 != ~uint64_t{0}) report(v1, i, n);
    if (v2 != ~uint64_t{0}) report(v2, i + kStep, n);
  }
  for (; i + kStep <= n; i += kStep) {
    uint64_t lo;
    const uint64_t v = block(p + i, &lo) | carry;
    carry = lo;
    if (v != ~uint64_t{0}) report(v, i, n);
  }
  if (i < n) {
    // The last 1..7 bytes, zero-padded: a padding byte only affects ends at or
    // after itself, which are not reported, and a zero next byte is what the
    // text's last byte has anyway (no atom continues past the text).
    unsigned char tail[16] = {};
    std::memcpy(tail, p + i, n - i);
    uint64_t lo;
    const uint64_t v = block(tail, &lo) | carry;
    if (v != ~uint64_t{0}) report(v, i, n);
  }
  for (size_t k = first_new; k < ids->size(); ++k) (*seen)[(*ids)[k]] = 0;
}

}  // namespace ncclscan
