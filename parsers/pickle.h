// Pickle: a reader for the small subset of Python's pickle format that
// PyTorch's Flight Recorder writes (parsers/flight_recorder.h), building a
// bounded tree of plain values (None, bool, int, float, str, list, tuple, dict).
//
// It is a data reader, not an unpickler: no code runs and no class is built.
// The only callables it knows are PyTorch's container tags
// (torch.jit._pickle.build_intlist / build_doublelist / build_boollist /
// restore_type_tag), each read as the identity on its first argument. Every
// other opcode or global is rejected with its byte offset, so a foreign pickle
// gives a clear error instead of a wrong tree. The opcodes: docs/flight_recorder.md.
//
// Bounded: the tree (values, container slots, the stack and the memo) may use
// at most kMaxPickleTreeBytes, MARKs nest at most kMaxPickleDepth deep; beyond
// either the parse fails with "too large" / "too deeply nested". A tree is a
// DAG (the memo lets one value appear in several places, even inside itself):
// readers walk only the paths they know, never the whole tree recursively.
//
// Thread-safety: a PyTree is a plain value; ParsePickle is reentrant.
#ifndef NCCLSCAN_PARSERS_PICKLE_H_
#define NCCLSCAN_PARSERS_PICKLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

inline constexpr size_t kMaxPickleTreeBytes = size_t{256} << 20;
inline constexpr size_t kMaxPickleDepth = 64;

enum class PyKind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kList, kTuple, kDict, kCallable };

// Values by index. Strings are views into the bytes the tree was built from
// (they must outlive the tree). Dict items are stored key, value, key, value.
class PyTree {
 public:
  static constexpr uint32_t kNoValue = UINT32_MAX;

  // kind() and items() accept kNoValue (None, no items), so lookups chain.
  PyKind kind(uint32_t v) const { return v < nodes_.size() ? nodes_[v].kind : PyKind::kNone; }
  bool boolean(uint32_t v) const { return nodes_[v].u.i != 0; }
  int64_t integer(uint32_t v) const { return nodes_[v].u.i; }
  double real(uint32_t v) const { return nodes_[v].u.f; }
  std::string_view str(uint32_t v) const { return std::string_view(nodes_[v].u.s, nodes_[v].len); }
  // The items of a list, tuple or dict (empty for anything else).
  const std::vector<uint32_t>& items(uint32_t v) const;
  uint32_t root() const { return root_; }
  size_t size() const { return nodes_.size(); }

  // The value of dict `d` under the string key `key`, kNoValue if d is not a
  // dict or has no such key (the last one wins, as in Python).
  uint32_t Get(uint32_t d, std::string_view key) const;

  // Builders (used by ParsePickle and by readers of other formats, e.g. the
  // JSON form of a dump). Each returns the new value's index, or kNoValue when
  // the tree would exceed kMaxPickleTreeBytes.
  uint32_t AddNone() { return Add(PyKind::kNone, 0, 0); }
  uint32_t AddBool(bool b) { return Add(PyKind::kBool, b ? 1 : 0, 0); }
  uint32_t AddInt(int64_t i) { return Add(PyKind::kInt, i, 0); }
  uint32_t AddFloat(double f);
  uint32_t AddStr(std::string_view s);
  uint32_t AddContainer(PyKind kind);  // kList, kTuple or kDict
  uint32_t AddCallable() { return Add(PyKind::kCallable, 0, 0); }
  // Appends to a container; false when the tree would exceed its budget.
  bool Append(uint32_t container, uint32_t item);
  void set_root(uint32_t v) { root_ = v; }
  // Bytes charged so far (nodes, container slots, and what the reader adds).
  size_t bytes() const { return bytes_; }
  // Charges n bytes of the reader's own bookkeeping (stack, memo) to the budget.
  bool Charge(size_t n);

 private:
  struct Node {
    PyKind kind;
    uint32_t len;  // kStr: bytes; containers: index into containers_
    union {
      int64_t i;
      double f;
      const char* s;
    } u;
  };
  uint32_t Add(PyKind kind, int64_t i, uint32_t len);

  std::vector<Node> nodes_;
  std::vector<std::vector<uint32_t>> containers_;
  uint32_t root_ = kNoValue;
  size_t bytes_ = 0;
};

// Parses a whole pickle (from its PROTO opcode or first opcode to STOP;
// bytes after STOP are ignored, as Python does). On failure returns false with
// a one-line reason: "unsupported pickle opcode 0x8f at byte 123",
// "unsupported pickle global '__main__.Foo' at byte 4", "truncated pickle at
// byte N: ...", "malformed pickle at byte N: ...", "pickle too large: ...",
// "pickle too deeply nested at byte N". `bytes` must outlive *tree.
bool ParsePickle(std::string_view bytes, PyTree* tree, std::string* err);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_PICKLE_H_
