#include "parsers/pickle.h"

#include <cstring>

namespace ncclscan {

namespace {

// Opcodes (CPython Lib/pickle.py names).
enum Op : uint8_t {
  kMark = '(',
  kStop = '.',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinFloat = 'G',
  kReduce = 'R',
  kBinString = 'T',
  kShortBinString = 'U',
  kBinUnicode = 'X',
  kEmptyList = ']',
  kAppend = 'a',
  kGlobal = 'c',
  kDict = 'd',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kSetItems = 'u',
  kEmptyDict = '}',
  kEmptyTuple = ')',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kMemoize = 0x94,
  kFrame = 0x95,
};

// How far past the memo's end a PUT may reach (real writers never skip keys).
constexpr uint64_t kMaxMemoGap = 1 << 16;

const std::vector<uint32_t>& NoItems() {
  static const std::vector<uint32_t> kEmpty;
  return kEmpty;
}

std::string Hex2(uint8_t b) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

uint64_t LittleEndian(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// The stack machine over one buffer. Errors are values: each step returns
// false with err_ set, and Run stops.
class Machine {
 public:
  Machine(std::string_view bytes, PyTree* tree) : in_(bytes), tree_(tree) {}

  bool Run(std::string* err) {
    while (pos_ < in_.size()) {
      op_at_ = pos_;
      uint8_t op = static_cast<uint8_t>(in_[pos_++]);
      if (op == kStop) {
        uint32_t v = 0;
        if (!Pop(&v)) return Fail(err);
        tree_->set_root(v);
        return true;
      }
      if (!Step(op)) return Fail(err);
    }
    err_ = "truncated pickle at byte " + std::to_string(in_.size()) + ": no STOP opcode";
    return Fail(err);
  }

 private:
  bool Fail(std::string* err) {
    *err = err_;
    return false;
  }

  // One opcode: the simple ones here, the others in a method of their own.
  bool Step(uint8_t op) {
    switch (op) {
      case kProto:
        return Proto();
      case kFrame: {  // protocol 4 framing: a length hint, nothing to build
        const unsigned char* p = nullptr;
        return Take(8, &p);
      }
      case kMark:
        return Mark();
      case kNone:
        return Push(tree_->AddNone());
      case kNewTrue:
        return Push(tree_->AddBool(true));
      case kNewFalse:
        return Push(tree_->AddBool(false));
      case kBinInt1:
      case kBinInt2:
      case kBinInt:
        return BinInt(op);
      case kLong1:
        return Long1();
      case kBinFloat:
        return BinFloat();
      case kShortBinUnicode:
      case kShortBinString:
        return String(1);
      case kBinUnicode:
        return String(4);
      case kBinString: {  // a signed 4-byte length
        if (in_.size() - pos_ >= 4 && (static_cast<uint8_t>(in_[pos_ + 3]) & 0x80)) {
          return Malformed("negative BINSTRING length");
        }
        return String(4);
      }
      case kBinUnicode8:
        return String(8);
      case kEmptyList:
        return Push(tree_->AddContainer(PyKind::kList));
      case kEmptyDict:
        return Push(tree_->AddContainer(PyKind::kDict));
      case kEmptyTuple:
        return Push(tree_->AddContainer(PyKind::kTuple));
      case kList:
      case kTuple:
      case kDict:
        return FromMark(op == kList ? PyKind::kList : op == kTuple ? PyKind::kTuple : PyKind::kDict);
      case kTuple1:
      case kTuple2:
      case kTuple3:
        return TupleN(op);
      case kAppend: {
        uint32_t v = 0;
        if (!Pop(&v)) return false;
        return AddTo(PyKind::kList, &v, 1);
      }
      case kSetItem:
        return SetItem();
      case kAppends:
      case kSetItems:
        return AppendsOrSetItems(op);
      case kBinPut:
      case kLongBinPut:
        return BinPut(op);
      case kMemoize:
        return Put(memo_.size());
      case kBinGet:
      case kLongBinGet:
        return BinGet(op);
      case kGlobal:
        return Global();
      case kReduce:
        return Reduce();
      default:
        err_ = "unsupported pickle opcode " + Hex2(op) + " at byte " + std::to_string(op_at_);
        return false;
    }
  }

  bool Proto() {
    const unsigned char* p = nullptr;
    if (!Take(1, &p)) return false;
    if (*p > 5) return Malformed("protocol " + std::to_string(*p) + " is not 0-5");
    return true;
  }

  bool BinInt(uint8_t op) {
    size_t n = op == kBinInt1 ? 1 : op == kBinInt2 ? 2 : 4;
    const unsigned char* p = nullptr;
    if (!Take(n, &p)) return false;
    uint64_t v = LittleEndian(p, n);
    int64_t i =
        op == kBinInt ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v))) : static_cast<int64_t>(v);
    return Push(tree_->AddInt(i));
  }

  bool Long1() {
    const unsigned char* n = nullptr;
    if (!Take(1, &n)) return false;
    const unsigned char* p = nullptr;
    if (!Take(*n, &p)) return false;
    return Push(Long(p, *n));
  }

  bool BinFloat() {
    const unsigned char* p = nullptr;
    if (!Take(8, &p)) return false;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];  // big-endian
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return Push(tree_->AddFloat(d));
  }

  bool TupleN(uint8_t op) {
    size_t n = op - kTuple1 + 1;
    if (stack_.size() < n + Floor()) return Malformed("stack underflow");
    uint32_t t = tree_->AddContainer(PyKind::kTuple);
    if (t == PyTree::kNoValue) return TooLarge();
    for (size_t i = stack_.size() - n; i < stack_.size(); ++i) {
      if (!tree_->Append(t, stack_[i])) return TooLarge();
    }
    stack_.resize(stack_.size() - n);
    return Push(t);
  }

  bool SetItem() {
    if (stack_.size() < 2 + Floor()) return Malformed("stack underflow");
    uint32_t kv[2] = {stack_[stack_.size() - 2], stack_.back()};
    stack_.resize(stack_.size() - 2);
    return AddTo(PyKind::kDict, kv, 2);
  }

  bool AppendsOrSetItems(uint8_t op) {
    if (marks_.empty()) return Malformed("no MARK");
    size_t m = marks_.back();
    marks_.pop_back();
    size_t n = stack_.size() - m;
    if (op == kSetItems && n % 2) return Malformed("SETITEMS with an odd number of items");
    bool ok = AddTo(op == kAppends ? PyKind::kList : PyKind::kDict, stack_.data() + m, n, m);
    stack_.resize(m);
    return ok;
  }

  bool BinPut(uint8_t op) {
    const unsigned char* p = nullptr;
    size_t n = op == kBinPut ? 1 : 4;
    if (!Take(n, &p)) return false;
    return Put(LittleEndian(p, n));
  }

  bool BinGet(uint8_t op) {
    const unsigned char* p = nullptr;
    size_t n = op == kBinGet ? 1 : 4;
    if (!Take(n, &p)) return false;
    uint64_t k = LittleEndian(p, n);
    if (k >= memo_.size() || memo_[k] == PyTree::kNoValue) {
      return Malformed("memo key " + std::to_string(k) + " is not defined");
    }
    return Push(memo_[k]);
  }

  bool Reduce() {
    uint32_t args = 0, fn = 0;
    if (!Pop(&args) || !Pop(&fn)) return false;
    if (tree_->kind(fn) != PyKind::kCallable) return Malformed("REDUCE of a value that is not a global");
    if (tree_->kind(args) != PyKind::kTuple || tree_->items(args).empty()) {
      return Malformed("REDUCE without arguments");
    }
    return Push(tree_->items(args)[0]);  // the container tags are the identity
  }

  bool Mark() {
    if (marks_.size() >= kMaxPickleDepth) {
      err_ = "pickle too deeply nested at byte " + std::to_string(op_at_) + " (more than " +
             std::to_string(kMaxPickleDepth) + " open MARKs)";
      return false;
    }
    marks_.push_back(stack_.size());
    return true;
  }

  // GLOBAL "module\nname\n": only PyTorch's container tags are known.
  bool Global() {
    std::string_view rest = in_.substr(pos_);
    size_t nl1 = rest.find('\n');
    size_t nl2 = nl1 == std::string_view::npos ? nl1 : rest.find('\n', nl1 + 1);
    if (nl2 == std::string_view::npos) {
      // A GLOBAL's lines are short: a missing newline within 256 bytes is not truncation.
      if (rest.size() > 256) return Malformed("GLOBAL without its two lines");
      return Truncated();
    }
    std::string_view module = rest.substr(0, nl1), name = rest.substr(nl1 + 1, nl2 - nl1 - 1);
    pos_ += nl2 + 1;
    if (module == "torch.jit._pickle" && (name == "build_intlist" || name == "build_doublelist" ||
                                          name == "build_boollist" || name == "restore_type_tag")) {
      return Push(tree_->AddCallable());
    }
    std::string shown(module.substr(0, 64));
    shown += ".";
    shown += name.substr(0, 64);
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    }
    err_ = "unsupported pickle global '" + shown + "' (opcode 0x63) at byte " + std::to_string(op_at_);
    return false;
  }

  // A LONG1 integer: n bytes, little-endian two's complement. Wider than 64
  // bits (never in a dump) it is kept as a float approximation.
  uint32_t Long(const unsigned char* p, size_t n) {
    if (n == 0) return tree_->AddInt(0);
    bool negative = (p[n - 1] & 0x80) != 0;
    if (n <= 8) {
      uint64_t v = LittleEndian(p, n);
      if (negative && n < 8) v |= ~uint64_t{0} << (8 * n);
      return tree_->AddInt(static_cast<int64_t>(v));
    }
    double d = 0;
    for (size_t i = n; i-- > 0;) d = d * 256 + (negative ? static_cast<uint8_t>(~p[i]) : p[i]);
    return tree_->AddFloat(negative ? -d - 1 : d);
  }

  bool String(size_t len_bytes) {
    const unsigned char* p = nullptr;
    if (!Take(len_bytes, &p)) return false;
    uint64_t n = LittleEndian(p, len_bytes);
    if (n > in_.size() - pos_) return Truncated();
    std::string_view s = in_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return Push(tree_->AddStr(s));
  }

  // LIST / TUPLE / DICT: the items since the last MARK.
  bool FromMark(PyKind kind) {
    if (marks_.empty()) return Malformed("no MARK");
    size_t m = marks_.back();
    marks_.pop_back();
    size_t n = stack_.size() - m;
    if (kind == PyKind::kDict && n % 2) return Malformed("DICT with an odd number of items");
    uint32_t c = tree_->AddContainer(kind);
    if (c == PyTree::kNoValue) return TooLarge();
    for (size_t i = m; i < stack_.size(); ++i) {
      if (!tree_->Append(c, stack_[i])) return TooLarge();
    }
    stack_.resize(m);
    return Push(c);
  }

  // Appends n values to the container below them (at index `at` of the stack,
  // or just below the values when at is npos). `values` may point into stack_.
  bool AddTo(PyKind kind, const uint32_t* values, size_t n, size_t at = std::string::npos) {
    size_t c_at = at == std::string::npos ? stack_.size() : at;
    if (c_at == 0 || c_at - 1 < Floor()) return Malformed("stack underflow");
    uint32_t c = stack_[c_at - 1];
    if (tree_->kind(c) != kind) {
      return Malformed(std::string(kind == PyKind::kList ? "APPEND to a value that is not a list"
                                                         : "SETITEM on a value that is not a dict"));
    }
    for (size_t i = 0; i < n; ++i) {
      if (!tree_->Append(c, values[i])) return TooLarge();
    }
    return true;
  }

  bool Put(uint64_t k) {
    if (stack_.size() <= Floor()) return Malformed("memo PUT with an empty stack");
    if (k >= memo_.size()) {
      // Python's and PyTorch's picklers number memo entries 0, 1, 2, ...: a
      // key far past the last is not from them, and would cost its slots.
      if (k - memo_.size() > kMaxMemoGap) {
        return Malformed("memo key " + std::to_string(k) + " far beyond the " + std::to_string(memo_.size()) +
                         " defined");
      }
      if (!tree_->Charge((k + 1 - memo_.size()) * sizeof(uint32_t))) return TooLarge();
      memo_.resize(static_cast<size_t>(k) + 1, PyTree::kNoValue);
    }
    memo_[k] = stack_.back();
    return true;
  }

  bool Push(uint32_t v) {
    if (v == PyTree::kNoValue) return TooLarge();
    // The stack can hold memo references that cost no new value: charge them.
    if (stack_.size() == stack_.capacity() && !tree_->Charge(stack_.size() * sizeof(uint32_t) + 64)) {
      return TooLarge();
    }
    stack_.push_back(v);
    return true;
  }

  bool Pop(uint32_t* v) {
    if (stack_.size() <= Floor()) return Malformed("stack underflow");
    *v = stack_.back();
    stack_.pop_back();
    return true;
  }

  // Values below the innermost MARK belong to an outer level.
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }

  bool Take(size_t n, const unsigned char** p) {
    if (n > in_.size() - pos_) return Truncated();
    *p = reinterpret_cast<const unsigned char*>(in_.data() + pos_);
    pos_ += n;
    return true;
  }

  bool Truncated() {
    err_ = "truncated pickle at byte " + std::to_string(in_.size()) + ": opcode " +
           Hex2(static_cast<uint8_t>(in_[op_at_])) + " at byte " + std::to_string(op_at_) + " runs past the end";
    return false;
  }
  bool Malformed(const std::string& what) {
    err_ = "malformed pickle at byte " + std::to_string(op_at_) + ": " + what;
    return false;
  }
  bool TooLarge() {
    err_ = "pickle too large: more than " + std::to_string(kMaxPickleTreeBytes >> 20) + " MiB of values at byte " +
           std::to_string(op_at_);
    return false;
  }

  std::string_view in_;
  PyTree* tree_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::vector<uint32_t> memo_;
  std::string err_;
};

}  // namespace

const std::vector<uint32_t>& PyTree::items(uint32_t v) const {
  PyKind k = kind(v);
  if (k != PyKind::kList && k != PyKind::kTuple && k != PyKind::kDict) return NoItems();
  return containers_[nodes_[v].len];
}

uint32_t PyTree::Get(uint32_t d, std::string_view key) const {
  if (d == kNoValue || kind(d) != PyKind::kDict) return kNoValue;
  const std::vector<uint32_t>& it = items(d);
  uint32_t found = kNoValue;
  for (size_t i = 0; i + 1 < it.size(); i += 2) {
    if (kind(it[i]) == PyKind::kStr && str(it[i]) == key) found = it[i + 1];
  }
  return found;
}

uint32_t PyTree::Add(PyKind kind, int64_t i, uint32_t len) {
  if (!Charge(sizeof(Node))) return kNoValue;
  Node n;
  n.kind = kind;
  n.len = len;
  n.u.i = i;
  nodes_.push_back(n);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

uint32_t PyTree::AddFloat(double f) {
  uint32_t v = Add(PyKind::kFloat, 0, 0);
  if (v != kNoValue) nodes_[v].u.f = f;
  return v;
}

uint32_t PyTree::AddStr(std::string_view s) {
  // A string longer than 4 GiB cannot come from an input under the size cap.
  if (s.size() > UINT32_MAX) return kNoValue;
  uint32_t v = Add(PyKind::kStr, 0, static_cast<uint32_t>(s.size()));
  if (v != kNoValue) nodes_[v].u.s = s.data();
  return v;
}

uint32_t PyTree::AddContainer(PyKind kind) {
  if (!Charge(sizeof(std::vector<uint32_t>))) return kNoValue;
  uint32_t v = Add(kind, 0, static_cast<uint32_t>(containers_.size()));
  if (v != kNoValue) containers_.emplace_back();
  return v;
}

bool PyTree::Append(uint32_t container, uint32_t item) {
  if (!Charge(sizeof(uint32_t))) return false;
  containers_[nodes_[container].len].push_back(item);
  return true;
}

bool PyTree::Charge(size_t n) {
  if (n > kMaxPickleTreeBytes - bytes_) return false;
  bytes_ += n;
  return true;
}

bool ParsePickle(std::string_view bytes, PyTree* tree, std::string* err) {
  Machine m(bytes, tree);
  return m.Run(err);
}

}  // namespace ncclscan
