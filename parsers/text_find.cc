// The literal searches of text_util.h: EqualBytes, LiteralFinder and FindLiteral (exact
// bytes, memchr or SIMD pair pivots) and MayContainFolded (the rule gates'
// case-blind test).
#include <algorithm>
#include <cstring>

#include "parsers/text_util.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace ncclscan {

// Here, beside the searches that call it on every candidate, so that they inline it.
bool EqualBytes(const char* p, const char* q, size_t m) {
  auto load64 = [](const char* x) {
    uint64_t v;
    std::memcpy(&v, x, 8);
    return v;
  };
  auto load32 = [](const char* x) {
    uint32_t v;
    std::memcpy(&v, x, 4);
    return v;
  };
  if (m > 16) {
#ifdef __SSE2__
    // 16 bytes at a time, the last vector overlapping the ones before.
    auto same16 = [&](size_t at) {
      __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
      __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + at));
      return _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) == 0xFFFF;
    };
    for (size_t k = 0; k + 16 < m; k += 16) {
      if (!same16(k)) return false;
    }
    return same16(m - 16);
#else
    return std::memcmp(p, q, m) == 0;
#endif
  }
  if (m >= 8) return load64(p) == load64(q) && load64(p + m - 8) == load64(q + m - 8);
  if (m >= 4) return load32(p) == load32(q) && load32(p + m - 4) == load32(q + m - 4);
  for (size_t k = 0; k < m; ++k) {
    if (p[k] != q[k]) return false;
  }
  return true;
}

namespace {

void ChoosePivots(std::string_view lit, size_t* rare_out, size_t* b0_out, size_t* b1_out) {
  const size_t m = lit.size();
  // A byte that is rare in log text (not a lower-case letter, digit or blank:
  // 'N' of "NCCL ", ':' of ": opCount ") makes memchr the filter: it skips
  // whole lines that lack it at memory speed.
  size_t rare = 0;
  while (rare < m && (IsSpace(lit[rare]) || IsDigit(lit[rare]) || (lit[rare] >= 'a' && lit[rare] <= 'z'))) ++rare;
  // Otherwise the pair filter on the first and last non-blank bytes (a blank is
  // next to every word).
  size_t b0 = 0, b1 = m ? m - 1 : 0;
  while (b0 + 1 < m && IsSpace(lit[b0])) ++b0;
  while (b1 > b0 + 1 && IsSpace(lit[b1])) --b1;
  if (b1 <= b0) b0 = 0, b1 = m ? m - 1 : 0;
  *rare_out = rare;
  *b0_out = b0;
  *b1_out = b1;
}

size_t FindWithPivots(std::string_view s, std::string_view lit, size_t from, size_t rare, size_t b0, size_t b1) {
  if (lit.empty()) return from <= s.size() ? from : std::string_view::npos;
  if (from > s.size() || lit.size() > s.size() - from) return std::string_view::npos;
  const char* base = s.data();
  const size_t m = lit.size();
  if (m == 1) {
    const void* p = std::memchr(base + from, lit[0], s.size() - from);
    return p ? static_cast<const char*>(p) - base : std::string_view::npos;
  }
  if (rare < m) {
    const char* end = base + s.size() - (m - 1 - rare);  // one past the last pivot position
    const char* p = base + from + rare;
#ifdef __SSE2__
    // The pivot is often close (": opCount " right after the collective's
    // name): one vector here before the memchr call.
    if (end - p >= 16) {
      __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      uint32_t mask = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(lit[rare]))));
      for (; mask; mask &= mask - 1) {
        const char* q = p + __builtin_ctz(mask);
        if (EqualBytes(q - rare, lit.data(), m)) return q - rare - base;
      }
      p += 16;
    }
#endif
    for (; p < end; ++p) {
      p = static_cast<const char*>(std::memchr(p, lit[rare], end - p));
      if (!p) return std::string_view::npos;
      if (EqualBytes(p - rare, lit.data(), m)) return p - rare - base;
    }
    return std::string_view::npos;
  }
  // Wojciech Mula's SIMD substring search: positions where both pivot bytes
  // match, 16 at a time; only those are compared whole.
  size_t i = from;
  const size_t last = s.size() - m;  // last possible start
#ifdef __SSE2__
  const __m128i v0 = _mm_set1_epi8(lit[b0]), v1 = _mm_set1_epi8(lit[b1]);
  auto pairs = [&](size_t at) {  // bit j: base[at+j+b0] and base[at+j+b1] match
    __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + at + b0));
    __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + at + b1));
    return _mm_and_si128(_mm_cmpeq_epi8(x0, v0), _mm_cmpeq_epi8(x1, v1));
  };
  while (i + 16 <= last + 1) {
    uint32_t mask;
    size_t step = 16;
    if (i + 32 <= last + 1) {  // two vectors per branch
      __m128i a = pairs(i), b = pairs(i + 16);
      step = 32;
      if (_mm_movemask_epi8(_mm_or_si128(a, b)) == 0) {
        i += step;
        continue;
      }
      mask = static_cast<uint32_t>(_mm_movemask_epi8(a)) | static_cast<uint32_t>(_mm_movemask_epi8(b)) << 16;
    } else {
      mask = static_cast<uint32_t>(_mm_movemask_epi8(pairs(i)));
    }
    for (; mask; mask &= mask - 1) {
      size_t k = i + static_cast<size_t>(__builtin_ctz(mask));
      if (EqualBytes(base + k, lit.data(), m)) return k;
    }
    i += step;
  }
  // The last starts: one more vector that overlaps the ones before, its
  // already-checked positions masked off (no byte-by-byte tail).
  if (i <= last && last + 1 >= from + 16) {
    const size_t j = last + 1 - 16;
    uint32_t mask = static_cast<uint32_t>(_mm_movemask_epi8(pairs(j))) >> (i - j) << (i - j);
    for (; mask; mask &= mask - 1) {
      size_t k = j + static_cast<size_t>(__builtin_ctz(mask));
      if (EqualBytes(base + k, lit.data(), m)) return k;
    }
    return std::string_view::npos;
  }
#endif
  for (; i <= last; ++i) {
    if (base[i + b0] == lit[b0] && base[i + b1] == lit[b1] && EqualBytes(base + i, lit.data(), m)) return i;
  }
  return std::string_view::npos;
}

}  // namespace

bool MayContainFolded(std::string_view s, std::string_view lower) {
  const size_t m = lower.size();
  if (m == 0) return true;
  if (m > s.size()) return false;
  const unsigned char* base = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char* lit = reinterpret_cast<const unsigned char*>(lower.data());
  auto rest_equal = [&](size_t k) {
    for (size_t j = 0; j < m; ++j) {
      if ((base[k + j] | 0x20) != (lit[j] | 0x20)) return false;
    }
    return true;
  };
  size_t i = 0;
  const size_t last = s.size() - m;  // last possible start
#ifdef __SSE2__
  // The pair filter of FindWithPivots on the first and last bytes, folded.
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i v0 = _mm_set1_epi8(static_cast<char>(lit[0] | 0x20));
  const __m128i v1 = _mm_set1_epi8(static_cast<char>(lit[m - 1] | 0x20));
  for (; i + 16 <= last + 1; i += 16) {
    __m128i x0 = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i)), fold);
    __m128i x1 = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i + m - 1)), fold);
    uint32_t mask =
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(x0, v0), _mm_cmpeq_epi8(x1, v1))));
    for (; mask; mask &= mask - 1) {
      if (rest_equal(i + static_cast<size_t>(__builtin_ctz(mask)))) return true;
    }
  }
#endif
  for (; i <= last; ++i) {
    if (rest_equal(i)) return true;
  }
  return false;
}

LiteralFinder::LiteralFinder(std::string_view lit) : lit_(lit) { ChoosePivots(lit_, &rare_, &b0_, &b1_); }

size_t LiteralFinder::Find(std::string_view s, size_t from) const {
  return FindWithPivots(s, lit_, from, rare_, b0_, b1_);
}

size_t FindLiteral(std::string_view s, std::string_view lit, size_t from) {
  size_t rare, b0, b1;
  ChoosePivots(lit, &rare, &b0, &b1);
  return FindWithPivots(s, lit, from, rare, b0, b1);
}

}  // namespace ncclscan
