// The byte encoding of scan state (partials, engine/run/partial.h): LEB128
// varints (signed ones zigzag), strings as a varint length and the bytes,
// doubles 8 bytes little-endian; and the generic helpers every part of
// JobState encodes its fields with (engine/state/parts.h).
//
// Thread-safety: a writer or reader is used by one thread.
#ifndef NCCLSCAN_ENGINE_STATE_WIRE_H_
#define NCCLSCAN_ENGINE_STATE_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

// Appends values to a byte string (the encodings above).
class WireWriter {
 public:
  void U(uint64_t v);
  void I(int64_t v) { U((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void S(std::string_view s);
  void D(double d);
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Reads them back. A read past the end or a length beyond what remains sets
// ok() false and returns zeros; callers check ok() once at the end and bound
// every count with Count() before they allocate.
class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  uint64_t U();
  int64_t I() {
    uint64_t u = U();
    return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  }
  std::string S();
  double D();
  // A count of elements that each take at least one byte: never more than remain.
  size_t Count();
  // An index that must be in [lo, n): out of range fails the read.
  int Index(int64_t lo, size_t n);
  bool ok() const { return ok_; }
  bool done() const { return in_.empty(); }
  void Fail() { ok_ = false; }

 private:
  std::string_view in_;
  bool ok_ = true;
};

// What indices in a decoded state may point at, learnt as its parts are
// read: files and origins come first, then subjects, so evidence and subject
// indices are checked as they are read.
struct Limits {
  size_t files = 0;
  size_t origins = 0;
  size_t subjects = 0;
  size_t facts = 0;
  size_t rules = 0;
};

// Values a scan never makes are corrupt, not passed on to a report (a count
// of -5 or a line of -7 is JSON the schema rejects): a line is 1-based in
// its file (0 without one), a time finite (-1 without one), a count >= 0.
void CheckLine(WireReader* r, int file, int64_t line);
void CheckTime(WireReader* r, double t);
inline void CheckCount(WireReader* r, int64_t count) {
  if (count < 0) r->Fail();
}

void PutStrings(WireWriter* w, const std::vector<std::string>& v);
void GetStrings(WireReader* r, std::vector<std::string>* v);

// Maps (or vectors of pairs) of strings and integers, by their types.
inline void PutValue(WireWriter* w, const std::string& v) { w->S(v); }
inline void PutValue(WireWriter* w, int64_t v) { w->I(v); }
inline void GetValue(WireReader* r, std::string* v) { *v = r->S(); }
template <typename Int>
void GetValue(WireReader* r, Int* v) {
  *v = static_cast<Int>(r->I());
}

template <typename K, typename V, typename C>
void PutValue(WireWriter* w, const std::map<K, V, C>& m);
template <typename K, typename V, typename C>
void GetValue(WireReader* r, std::map<K, V, C>* m);

template <typename Pairs>
void PutPairs(WireWriter* w, const Pairs& m) {
  w->U(m.size());
  for (const auto& kv : m) {
    PutValue(w, kv.first);
    PutValue(w, kv.second);
  }
}

template <typename Map>
void GetMap(WireReader* r, Map* m) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    typename Map::key_type k;
    GetValue(r, &k);
    GetValue(r, &(*m)[k]);
  }
}

template <typename K, typename V, typename C>
void PutValue(WireWriter* w, const std::map<K, V, C>& m) {
  PutPairs(w, m);
}
template <typename K, typename V, typename C>
void GetValue(WireReader* r, std::map<K, V, C>* m) {
  GetMap(r, m);
}

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_STATE_WIRE_H_
