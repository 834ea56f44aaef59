// Flight Recorder dumps: the pickle subset (every opcode, the memo, errors
// with byte offsets, limits), the JSON form, the mapping to FrDump, the rank
// from the file name, and dumps read by content among the other inputs.
#include "parsers/flight_recorder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/io/source.h"
#include "engine/run/analyze.h"
#include "parsers/pickle.h"
#include "rules/rule_loader.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

// A hand-written pickle, opcode by opcode, as PyTorch's pickler writes them.
class P {
 public:
  P() : b_("\x80\x02", 2) {}
  P& Op(uint8_t c) {
    b_ += static_cast<char>(c);
    return *this;
  }
  P& Raw(std::string_view s) {
    b_.append(s.data(), s.size());
    return *this;
  }
  P& LE(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_ += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  P& Str(std::string_view s) { return Op('X').LE(s.size(), 4).Raw(s); }
  P& Int(int64_t v) {
    if (v >= 0 && v < 256) return Op('K').LE(static_cast<uint64_t>(v), 1);
    if (v >= 0 && v < 65536) return Op('M').LE(static_cast<uint64_t>(v), 2);
    if (v >= INT32_MIN && v <= INT32_MAX) return Op('J').LE(static_cast<uint32_t>(v), 4);
    return Op(0x8a).Op(8).LE(static_cast<uint64_t>(v), 8);
  }
  P& Float(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    Op('G');
    for (int i = 7; i >= 0; --i) b_ += static_cast<char>((bits >> (8 * i)) & 0xff);
    return *this;
  }
  // PyTorch's typed int list: GLOBAL torch.jit._pickle build_intlist, then
  // REDUCE of the tuple holding a plain list.
  P& IntList(const std::vector<int64_t>& v) {
    Raw("ctorch.jit._pickle\nbuild_intlist\n").Op('(').Op(']').Op('(');
    for (int64_t x : v) Int(x);
    return Op('e').Op('t').Op('R');
  }
  std::string Stop() const { return b_ + "."; }
  const std::string& bytes() const { return b_; }

 private:
  std::string b_;
};

// Python-like text of a value (dict items in file order).
std::string Repr(const PyTree& t, uint32_t v, int depth = 0) {
  if (depth > 8) return "...";
  switch (t.kind(v)) {
    case PyKind::kNone:
      return "None";
    case PyKind::kBool:
      return t.boolean(v) ? "True" : "False";
    case PyKind::kInt:
      return std::to_string(t.integer(v));
    case PyKind::kFloat: {
      std::ostringstream o;
      o << t.real(v);
      return o.str();
    }
    case PyKind::kStr:
      return "'" + std::string(t.str(v)) + "'";
    case PyKind::kCallable:
      return "<global>";
    case PyKind::kList:
    case PyKind::kTuple: {
      bool list = t.kind(v) == PyKind::kList;
      std::string s = list ? "[" : "(";
      const auto& it = t.items(v);
      for (size_t i = 0; i < it.size(); ++i) s += (i ? ", " : "") + Repr(t, it[i], depth + 1);
      if (!list && it.size() == 1) s += ",";
      return s + (list ? "]" : ")");
    }
    case PyKind::kDict: {
      std::string s = "{";
      const auto& it = t.items(v);
      for (size_t i = 0; i + 1 < it.size(); i += 2) {
        s += (i ? ", " : "") + Repr(t, it[i], depth + 1) + ": " + Repr(t, it[i + 1], depth + 1);
      }
      return s + "}";
    }
  }
  return "?";
}

std::string ParseRepr(const std::string& bytes) {
  PyTree t;
  std::string err;
  if (!ParsePickle(bytes, &t, &err)) return "error: " + err;
  return Repr(t, t.root());
}

std::string ParseError(const std::string& bytes) {
  PyTree t;
  std::string err;
  if (ParsePickle(bytes, &t, &err)) return "parsed: " + Repr(t, t.root());
  return err;
}

TEST(Pickle, EveryOpcode) {
  struct Case {
    const char* what;
    std::string bytes;
    std::string want;
  };
  // One opcode sequence per line reads best.
  // clang-format off
  const std::vector<Case> cases = {
      {"NONE", P().Op('N').Stop(), "None"},
      {"NEWTRUE NEWFALSE TUPLE2", P().Op(0x88).Op(0x89).Op(0x86).Stop(), "(True, False)"},
      {"BININT1", P().Op('K').LE(200, 1).Stop(), "200"},
      {"BININT2", P().Op('M').LE(0x1234, 2).Stop(), "4660"},
      {"BININT negative", P().Op('J').LE(0xffffffffu, 4).Stop(), "-1"},
      {"LONG1 8 bytes", P().Int(1732270532000000000).Stop(), "1732270532000000000"},
      {"LONG1 0 bytes", P().Op(0x8a).Op(0).Stop(), "0"},
      {"LONG1 negative 1 byte", P().Op(0x8a).Op(1).Op(0xfe).Stop(), "-2"},
      {"LONG1 9 bytes", P().Op(0x8a).Op(9).LE(0, 8).Op(1).Stop(), "1.84467e+19"},
      {"BINFLOAT", P().Float(1.75).Stop(), "1.75"},
      {"BINUNICODE", P().Str("nccl:all_reduce").Stop(), "'nccl:all_reduce'"},
      {"SHORT_BINUNICODE", P().Op(0x8c).Op(3).Raw("abc").Stop(), "'abc'"},
      {"BINUNICODE8", P().Op(0x8d).LE(2, 8).Raw("hi").Stop(), "'hi'"},
      {"BINSTRING", P().Op('T').LE(3, 4).Raw("old").Stop(), "'old'"},
      {"SHORT_BINSTRING", P().Op('U').Op(2).Raw("py").Stop(), "'py'"},
      {"EMPTY_LIST APPEND", P().Op(']').Op('K').Op(1).Op('a').Op('K').Op(2).Op('a').Stop(), "[1, 2]"},
      {"MARK APPENDS", P().Op(']').Op('(').Op('K').Op(1).Op('K').Op(2).Op('e').Stop(), "[1, 2]"},
      {"LIST", P().Op('(').Op('K').Op(7).Op('l').Stop(), "[7]"},
      {"EMPTY_TUPLE", P().Op(')').Stop(), "()"},
      {"TUPLE1", P().Op('K').Op(1).Op(0x85).Stop(), "(1,)"},
      {"TUPLE3", P().Op('K').Op(1).Op('K').Op(2).Op('K').Op(3).Op(0x87).Stop(), "(1, 2, 3)"},
      {"MARK TUPLE", P().Op('(').Op('N').Op('N').Op('N').Op('N').Op('t').Stop(), "(None, None, None, None)"},
      {"EMPTY_DICT SETITEM", P().Op('}').Str("a").Op('K').Op(1).Op('s').Stop(), "{'a': 1}"},
      {"MARK SETITEMS", P().Op('}').Op('(').Str("a").Op('K').Op(1).Str("b").Op('N').Op('u').Stop(),
       "{'a': 1, 'b': None}"},
      {"DICT", P().Op('(').Str("k").Op(0x88).Op('d').Stop(), "{'k': True}"},
      {"FRAME (protocol 4)", std::string("\x80\x04\x95", 3) + std::string(8, '\0') + "N.", "None"},
      {"BINPUT BINGET", P().Str("x").Op('q').Op(0).Op('h').Op(0).Op(0x86).Stop(), "('x', 'x')"},
      {"LONG_BINPUT LONG_BINGET", P().Str("y").Op('r').LE(300, 4).Op('j').LE(300, 4).Op(0x86).Stop(), "('y', 'y')"},
      {"MEMOIZE", P().Str("z").Op(0x94).Op('h').Op(0).Op(0x86).Stop(), "('z', 'z')"},
      {"GLOBAL build_intlist REDUCE", P().IntList({2, 3}).Stop(), "[2, 3]"},
      {"restore_type_tag", P().Raw("ctorch.jit._pickle\nrestore_type_tag\n").Op('}').Str("Dict[str, int]")
                               .Op(0x86).Op('R').Stop(), "{}"},
      {"build_doublelist", P().Raw("ctorch.jit._pickle\nbuild_doublelist\n").Op('(').Op(']').Op('(').Float(0.5)
                               .Op('e').Op('t').Op('R').Stop(), "[0.5]"},
      {"build_boollist", P().Raw("ctorch.jit._pickle\nbuild_boollist\n").Op('(').Op(']').Op('(').Op(0x88)
                             .Op('e').Op('t').Op('R').Stop(), "[True]"},
      {"bytes after STOP are ignored", P().Op('N').Stop() + "garbage", "None"},
  };
  // clang-format on
  for (const Case& c : cases) EXPECT_EQ(ParseRepr(c.bytes), c.want) << c.what;
}

TEST(Pickle, MemoSharesMutableContainers) {
  // A list memoized, then appended to after it was referenced: both
  // references see the append, as in Python.
  PyTree t;
  std::string err;
  // clang-format off
  ASSERT_TRUE(ParsePickle(P().Op(']').Op('q').Op(0).Op('h').Op(0).Op(0x86)  // ([], []), one list
                              .Op('h').Op(0).Op('K').Op(9).Op('a')            // memo[0].append(9)
                              .Op(0x86).Stop(),
                          &t, &err))
      << err;
  // clang-format on
  EXPECT_EQ(Repr(t, t.root()), "(([9], [9]), [9])");
  const auto& pair = t.items(t.items(t.root())[0]);
  EXPECT_EQ(pair[0], pair[1]);
  // A list that holds itself (a cycle) is a valid tree; readers never recurse blindly.
  ASSERT_TRUE(ParsePickle(P().Op(']').Op('q').Op(0).Op('h').Op(0).Op('a').Stop(), &t, &err)) << err;
  EXPECT_EQ(t.items(t.root())[0], t.root());
}

TEST(Pickle, RejectsWithByteOffsets) {
  EXPECT_EQ(ParseError(P().Op(0x8f).Stop()), "unsupported pickle opcode 0x8f at byte 2");
  EXPECT_EQ(ParseError(P().Op('}').Op(0x93).Stop()), "unsupported pickle opcode 0x93 at byte 3");
  EXPECT_EQ(ParseError(P().Raw("c__main__\nCheckpoint\n").Op(')').Op(0x81).Stop()),
            "unsupported pickle global '__main__.Checkpoint' (opcode 0x63) at byte 2");
  EXPECT_EQ(ParseError(P().Raw("cbuiltins\neval\n").Stop()),
            "unsupported pickle global 'builtins.eval' (opcode 0x63) at byte 2");
  EXPECT_EQ(ParseError(P().Op('a').Stop()), "malformed pickle at byte 2: stack underflow");
  EXPECT_EQ(ParseError(P().Op('N').Op('K').Op(1).Op('a').Stop()),
            "malformed pickle at byte 5: APPEND to a value that is not a list");
  EXPECT_EQ(ParseError(P().Op('}').Op('(').Op('N').Op('u').Stop()),
            "malformed pickle at byte 5: SETITEMS with an odd number of items");
  EXPECT_EQ(ParseError(P().Op('h').Op(4).Stop()), "malformed pickle at byte 2: memo key 4 is not defined");
  EXPECT_EQ(ParseError(P().Op('e').Stop()), "malformed pickle at byte 2: no MARK");
  EXPECT_EQ(ParseError(P().Op('K').Op(1).Op('K').Op(2).Op('R').Stop()),
            "malformed pickle at byte 6: REDUCE of a value that is not a global");
  EXPECT_EQ(ParseError(P().Stop()), "malformed pickle at byte 2: stack underflow");
  EXPECT_EQ(ParseError(std::string("\x80\x07N.", 4)), "malformed pickle at byte 0: protocol 7 is not 0-5");
  // Values below a MARK are not the innermost level's to take.
  EXPECT_EQ(ParseError(P().Op('K').Op(1).Op('(').Op(0x85).Stop()), "malformed pickle at byte 5: stack underflow");
}

TEST(Pickle, Truncated) {
  EXPECT_EQ(ParseError(P().Op('N').bytes()), "truncated pickle at byte 3: no STOP opcode");
  EXPECT_EQ(ParseError(P().Op('X').LE(16, 4).Raw("abc").bytes()),
            "truncated pickle at byte 10: opcode 0x58 at byte 2 runs past the end");
  EXPECT_EQ(ParseError(P().Op('J').Op(1).bytes()),
            "truncated pickle at byte 4: opcode 0x4a at byte 2 runs past the end");
  EXPECT_EQ(ParseError(P().Raw("ctorch.jit._pi").bytes()),
            "truncated pickle at byte 16: opcode 0x63 at byte 2 runs past the end");
  EXPECT_EQ(ParseError(std::string("\x80", 1)), "truncated pickle at byte 1: opcode 0x80 at byte 0 runs past the end");
  EXPECT_EQ(ParseError(""), "truncated pickle at byte 0: no STOP opcode");
  // Every prefix of a real dump fails cleanly (no crash, a reason).
  // clang-format off
  std::string whole = P().Op('}').Op('(').Str("entries").Op(']').Op('(').Op('}').Str("state").Str("started").Op('s')
                          .Op('e').Str("version").Str("2.4").Op('u').Stop();
  // clang-format on
  for (size_t n = 0; n < whole.size(); ++n) {
    PyTree t;
    std::string err;
    EXPECT_FALSE(ParsePickle(whole.substr(0, n), &t, &err)) << n;
    EXPECT_NE(err.find("truncated pickle at byte " + std::to_string(n)), std::string::npos) << n << ": " << err;
  }
}

TEST(Pickle, Limits) {
  // Depth: MARKs nest at most kMaxPickleDepth deep.
  P deep;
  for (size_t i = 0; i <= kMaxPickleDepth; ++i) deep.Op('(');
  EXPECT_EQ(ParseError(deep.Stop()), "pickle too deeply nested at byte 66 (more than 64 open MARKs)");
  // A memo key that would need 16 GiB of slots: not from a real writer.
  EXPECT_EQ(ParseError(P().Op('N').Op('r').LE(0xfffffff0u, 4).Stop()),
            "malformed pickle at byte 3: memo key 4294967280 far beyond the 0 defined");
  EXPECT_EQ(ParseRepr(P().Op('N').Op('r').LE(1000, 4).Op('j').LE(1000, 4).Op(0x86).Stop()), "(None, None)");
  // Size: values past the budget (a tree charged close to it first).
  PyTree t;
  ASSERT_TRUE(t.Charge(kMaxPickleTreeBytes - 100));
  std::string err;
  std::string many = P().Op(']').bytes();
  for (int i = 0; i < 20; ++i) many += std::string("Na", 2);
  EXPECT_FALSE(ParsePickle(many + ".", &t, &err));
  EXPECT_EQ(err.rfind("pickle too large: more than 256 MiB of values at byte ", 0), 0u) << err;
}

// A dump as PyTorch's pickler writes it: dict, MARK, SETITEMS; typed int
// lists; tuples; None for times not reached; memoized repeated strings.
std::string PyTorchStyleDump() {
  P p;
  p.Op('}').Op('(');
  p.Str("version").Str("2.4");
  p.Str("comm_lib_version").Str("2.21.5");
  p.Str("pg_config").Op('}').Op('(').Str("0").Op('}').Op('(').Str("name").Str("0").Str("desc").Str("default_pg");
  p.Str("ranks").Str("[0, 1, 2, 3]").Op('u').Op('u');
  p.Str("pg_status").Op('}').Op('(').Str("0").Op('}').Op('(');
  p.Str("last_enqueued_collective").Int(3).Str("last_started_collective").Int(3);
  p.Str("last_completed_collective").Int(2).Op('u').Op('u');
  p.Str("entries").Op(']').Op('(');
  for (int i = 0; i < 2; ++i) {
    bool last = i == 1;
    p.Op('}').Op('(');
    p.Str("record_id").Int(i).Str("pg_id").Int(0);
    p.Str("process_group").Str("0").Str("default_pg").Op(0x86);
    p.Str("collective_seq_id").Int(i + 2).Str("p2p_seq_id").Int(0).Str("op_id").Int(i + 2);
    p.Str("profiling_name").Str("nccl:all_reduce");
    p.Str("time_created_ns").Int(1732270532000000000 + i);
    p.Str("input_sizes").Op(']').Op('(').IntList({4096, 1024}).Op('e');
    p.Str("output_sizes").Op(']').Op('(').IntList({4096, 1024}).Op('e');
    // The dtype string is memoized the first time and fetched after.
    if (i == 0) {
      p.Str("input_dtypes").Op(']').Op('(').Str("Float").Op('q').Op(50).Op('e');
    } else {
      p.Str("input_dtypes").Op(']').Op('(').Op('h').Op(50).Op('e');
    }
    p.Str("output_dtypes").Op(']').Op('(').Op('h').Op(50).Op('e');
    p.Str("state").Str(last ? "started" : "completed");
    p.Str("time_discovered_started_ns").Int(1732270532000050000 + i);
    p.Str("time_discovered_completed_ns");
    if (last) {
      p.Op('N');
    } else {
      p.Int(1732270532002000000);
    }
    p.Str("retired").Op(last ? 0x89 : 0x88).Str("timeout_ms").Int(600000).Str("is_p2p").Op(0x89);
    p.Str("duration_ms");
    if (last) {
      p.Op('N');
    } else {
      p.Float(1.75);
    }
    p.Str("frames").Op(']').Op('(').Op('}').Op('(').Str("name").Str("all_reduce").Str("filename").Str("c10d.py");
    p.Str("line").Int(2501).Op('u').Op('}').Op('(').Str("name").Str("train_step").Op('u').Op('e');
    p.Op('u');
  }
  p.Op('e');
  p.Op('u');
  return p.Stop();
}

TEST(FlightRecorder, ParsesPyTorchStylePickle) {
  FrDump d;
  std::string err;
  ASSERT_TRUE(ParseFlightRecorder(PyTorchStyleDump(), &d, &err)) << err;
  EXPECT_EQ(d.version, "2.4");
  EXPECT_EQ(d.nccl_version, "2.21.5");
  ASSERT_EQ(d.pg_config.count("0"), 1u);
  EXPECT_EQ(d.pg_config["0"].desc, "default_pg");
  EXPECT_EQ(d.pg_config["0"].ranks, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(d.pg_status.count("0"), 1u);
  EXPECT_EQ(d.pg_status["0"].last_enqueued, 3);
  EXPECT_EQ(d.pg_status["0"].last_started, 3);
  EXPECT_EQ(d.pg_status["0"].last_completed, 2);
  ASSERT_EQ(d.entries.size(), 2u);
  const FrEntry& e0 = d.entries[0];
  EXPECT_EQ(e0.record_id, 0);
  EXPECT_EQ(e0.pg_id, "0");
  EXPECT_EQ(e0.pg_name, "0");
  EXPECT_EQ(e0.pg_desc, "default_pg");
  EXPECT_EQ(e0.collective_seq_id, 2);
  EXPECT_EQ(e0.p2p_seq_id, 0);
  EXPECT_EQ(e0.profiling_name, "nccl:all_reduce");
  EXPECT_EQ(e0.state, "completed");
  EXPECT_TRUE(e0.retired);
  EXPECT_FALSE(e0.is_p2p);
  EXPECT_EQ(e0.time_created_ns, 1732270532000000000.0);
  EXPECT_EQ(e0.time_completed_ns, 1732270532002000000.0);
  EXPECT_EQ(e0.duration_ms, 1.75);
  EXPECT_EQ(e0.timeout_ms, 600000);
  EXPECT_EQ(e0.input_sizes, (std::vector<std::vector<int64_t>>{{4096, 1024}}));
  EXPECT_EQ(e0.output_sizes, (std::vector<std::vector<int64_t>>{{4096, 1024}}));
  EXPECT_EQ(e0.input_dtypes, std::vector<std::string>{"Float"});
  EXPECT_EQ(e0.output_dtypes, std::vector<std::string>{"Float"});
  EXPECT_EQ(e0.top_frame, "all_reduce (c10d.py:2501)");
  const FrEntry& e1 = d.entries[1];
  EXPECT_EQ(e1.state, "started");
  EXPECT_FALSE(e1.retired);
  EXPECT_EQ(e1.time_completed_ns, -1);  // None
  EXPECT_EQ(e1.duration_ms, -1);
  EXPECT_EQ(e1.input_dtypes, std::vector<std::string>{"Float"});  // through the memo
}

TEST(FlightRecorder, ParsesPythonPickleFromTheCorpus) {
  // tools/fr_fixtures.py: pickle.dump(d, f, protocol=2) (memo, LONG1 times, BINFLOAT).
  std::ifstream in(std::string(NCCLSCAN_SOURCE_DIR) + "/corpus/fr-size-mismatch/nccl_trace_rank_2", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  EXPECT_TRUE(LooksLikeFlightRecorder(bytes.substr(0, 64)));
  FrDump d;
  std::string err;
  ASSERT_TRUE(ParseFlightRecorder(bytes, &d, &err)) << err;
  EXPECT_EQ(d.version, "2.4");
  ASSERT_EQ(d.entries.size(), 8u);
  const FrEntry& last = d.entries.back();
  EXPECT_EQ(last.collective_seq_id, 8);
  EXPECT_EQ(last.state, "started");
  EXPECT_EQ(last.input_sizes, (std::vector<std::vector<int64_t>>{{4096, 512}}));
  EXPECT_EQ(last.time_completed_ns, -1);
  EXPECT_EQ(d.entries[0].time_created_ns, 1732270532000000000.0);
  EXPECT_EQ(d.entries[0].duration_ms, 1.75);
  EXPECT_EQ(d.pg_status["0"].last_completed, 7);
}

TEST(FlightRecorder, ParsesJsonForm) {
  const std::string json = R"({
 "version": "2.4",
 "nccl_version": "2.19.3",
 "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
 "pg_status": {"0": {"last_enqueued_collective": "5", "last_started_collective": "5",
                     "last_completed_collective": "4"}},
 "entries": [{"record_id": 4, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 5,
              "p2p_seq_id": 0, "op_id": 5, "profiling_name": "nccl:send 0->1", "time_created_ns": 17,
              "input_sizes": [[2, 3], []], "output_sizes": [[2, 3]], "input_dtypes": ["BFloat16", "Float"],
              "output_dtypes": ["BFloat16"], "state": "scheduled", "time_discovered_started_ns": null,
              "time_discovered_completed_ns": null, "retired": false, "timeout_ms": 600000, "is_p2p": true,
              "duration_ms": null, "frames": []}]
})";
  EXPECT_TRUE(LooksLikeFlightRecorder(json));
  FrDump d;
  std::string err;
  ASSERT_TRUE(ParseFlightRecorder(json, &d, &err)) << err;
  EXPECT_EQ(d.nccl_version, "2.19.3");
  EXPECT_EQ(d.pg_config["0"].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.pg_status["0"].last_enqueued, 5);
  EXPECT_EQ(d.pg_status["0"].last_completed, 4);
  ASSERT_EQ(d.entries.size(), 1u);
  const FrEntry& e = d.entries[0];
  EXPECT_EQ(e.pg_id, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.profiling_name, "nccl:send 0->1");
  EXPECT_TRUE(e.is_p2p);
  EXPECT_EQ(e.state, "scheduled");
  EXPECT_EQ(e.time_started_ns, -1);
  EXPECT_EQ(e.input_sizes, (std::vector<std::vector<int64_t>>{{2, 3}, {}}));
  EXPECT_EQ(e.input_dtypes, (std::vector<std::string>{"BFloat16", "Float"}));
  EXPECT_EQ(e.top_frame, "");
}

TEST(FlightRecorder, RejectsWhatIsNotADump) {
  FrDump d;
  std::string err;
  EXPECT_FALSE(ParseFlightRecorder(P().Op(']').Stop(), &d, &err));
  EXPECT_EQ(err, "not a Flight Recorder dump: the top-level value is a list, not a dict");
  EXPECT_FALSE(ParseFlightRecorder(P().Op('}').Str("a").Op('K').Op(1).Op('s').Stop(), &d, &err));
  EXPECT_EQ(err, "not a Flight Recorder dump: no 'entries', 'pg_config' or 'pg_status'");
  EXPECT_FALSE(ParseFlightRecorder(P().Op('}').Str("entries").Op('K').Op(1).Op('s').Stop(), &d, &err));
  EXPECT_EQ(err, "not a Flight Recorder dump: 'entries' is not a list");
  EXPECT_FALSE(ParseFlightRecorder(P().Op('}').Str("entries").Op(']').Op('N').Op('a').Op('s').Stop(), &d, &err));
  EXPECT_EQ(err, "not a Flight Recorder dump: entry 0 is not a dict");
  EXPECT_FALSE(ParseFlightRecorder("step 1 loss 2.3\n", &d, &err));
  EXPECT_EQ(err, "not a Flight Recorder dump: neither a pickle (protocol 2 or later) nor a JSON object");
  EXPECT_FALSE(ParseFlightRecorder("{\"pg_config\": {", &d, &err));
  EXPECT_EQ(err.rfind("invalid JSON: ", 0), 0u) << err;
  std::string deep_json(100, '[');
  EXPECT_FALSE(ParseFlightRecorder("{\"entries\": " + deep_json + std::string(100, ']') + "}", &d, &err));
  EXPECT_EQ(err, "JSON too deeply nested (more than 64 levels)");
}

TEST(FlightRecorder, SharedValuesCannotMultiplyWork) {
  // One entry dict with 100k keys, listed 400 times through the memo: a tiny
  // file that would make the mapping visit keys for ever (each listing is a
  // pass over the 100k keys: 400 of them are past the budget).
  P p;
  p.Op('}').Op('(').Str("entries").Op(']').Op('(');
  p.Op('}').Op('q').Op(1).Op('(').Str("k").Op('q').Op(2).Op('N');
  for (int i = 0; i < 100000; ++i) p.Op('h').Op(2).Op('N');
  p.Op('u');
  for (int i = 0; i < 399; ++i) p.Op('h').Op(1);
  p.Op('e').Op('u');
  FrDump d;
  std::string err;
  EXPECT_FALSE(ParseFlightRecorder(p.Stop(), &d, &err));
  EXPECT_EQ(err,
            "Flight Recorder dump too large: more than 67108864 values visited (shared values referenced many "
            "times)");
}

// A genuine dump of 100k entries (TORCH_NCCL_TRACE_BUFFER_SIZE that large)
// is read whole: the budget counts values visited, and each entry's keys are
// visited once. (Every key lookup used to be charged a pass over the entry:
// ~900 per entry, and dumps past ~75k entries were refused as "shared values
// referenced many times".)
TEST(FlightRecorder, LargeGenuineDumpIsRead) {
  constexpr int kEntries = 100000;
  std::string json = R"({"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
 "entries": [)";
  for (int i = 0; i < kEntries; ++i) {
    json += (i ? "," : "") + std::string(R"({"record_id": )") + std::to_string(i) +
            R"(, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": )" + std::to_string(i + 1) +
            R"(, "p2p_seq_id": 0, "op_id": )" + std::to_string(i + 1) +
            R"(, "profiling_name": "nccl:all_reduce", "time_created_ns": 1000, "input_sizes": [[1024]],
 "input_dtypes": ["Float"], "output_sizes": [[1024]], "output_dtypes": ["Float"], "state": "completed",
 "time_discovered_started_ns": 1000, "time_discovered_completed_ns": 2000, "retired": true,
 "timeout_ms": 600000, "is_p2p": false, "duration_ms": null, "thread_id": "1", "thread_name": "pt_main_thread",
 "frames": [{"name": "all_reduce", "filename": "/x/distributed_c10d.py", "line": 2501}]})";
  }
  json += "]}";
  FrDump d;
  std::string err;
  ASSERT_TRUE(ParseFlightRecorder(json, &d, &err)) << err;
  // The newest entries are kept, the older ones counted.
  ASSERT_EQ(d.entries.size(), kMaxFrEntriesPerDump);
  EXPECT_EQ(d.entries_dropped, kEntries - kMaxFrEntriesPerDump);
  EXPECT_EQ(d.entries.front().collective_seq_id, kEntries - static_cast<int64_t>(kMaxFrEntriesPerDump) + 1);
  EXPECT_EQ(d.entries.back().collective_seq_id, kEntries);
  EXPECT_EQ(d.entries.back().top_frame, "all_reduce (/x/distributed_c10d.py:2501)");
}

// The entries held have a total bound: past kMaxFrEntriesHeld a dump keeps its
// newest few, and holding the dumps again (as a merge does) drops nothing more.
TEST(FlightRecorder, EntriesHeldAreBounded) {
  auto dump = [](int entries) {
    FrFile f;
    for (int i = 0; i < entries; ++i) f.dump.entries.emplace_back().collective_seq_id = i + 1;
    return f;
  };
  std::vector<FrFile> held;
  size_t total = 0;
  uint64_t dropped = 0;
  const int n = static_cast<int>(kMaxFrEntriesHeld / kMaxFrEntriesPerDump) + 3;
  for (int i = 0; i < n; ++i) dropped += HoldFlightRecorder(&held, &total, dump(kMaxFrEntriesPerDump + 5));
  ASSERT_EQ(held.size(), static_cast<size_t>(n));
  EXPECT_EQ(held[0].dump.entries.size(), kMaxFrEntriesPerDump);
  EXPECT_EQ(held[0].dump.entries.front().collective_seq_id, 6);
  EXPECT_EQ(held.back().dump.entries.size(), kFrEntriesPastBound);
  EXPECT_EQ(held.back().dump.entries.back().collective_seq_id, static_cast<int64_t>(kMaxFrEntriesPerDump) + 5);
  EXPECT_LT(total, kMaxFrEntriesHeld + kMaxFrEntriesPerDump);
  size_t kept = 0;
  for (const auto& f : held) kept += f.dump.entries.size();
  EXPECT_EQ(kept, total);
  EXPECT_EQ(dropped + kept, static_cast<uint64_t>(n) * (kMaxFrEntriesPerDump + 5));
  std::vector<FrFile> again;
  size_t total2 = 0;
  uint64_t dropped2 = 0;
  for (auto& f : held) dropped2 += HoldFlightRecorder(&again, &total2, std::move(f));
  EXPECT_EQ(dropped2, 0u);
  EXPECT_EQ(total2, total);
}

TEST(FlightRecorder, LooksLike) {
  EXPECT_TRUE(LooksLikeFlightRecorder(std::string("\x80\x02}q\0(X\x07\0\0\0version", 18)));
  EXPECT_TRUE(LooksLikeFlightRecorder(std::string("\x80\x02}(X", 5)));
  EXPECT_TRUE(LooksLikeFlightRecorder(std::string("\x80\x04\x95\x10\0\0\0\0\0\0\0}\x94", 13)));
  EXPECT_TRUE(
      LooksLikeFlightRecorder(std::string("\x80\x02"
                                          "ctorch.jit._pickle\nrestore_type_tag\n",
                                          38)));
  EXPECT_FALSE(LooksLikeFlightRecorder(std::string("\x80\x02]q\0(K\x01", 7)));  // a list
  EXPECT_FALSE(
      LooksLikeFlightRecorder(std::string("\x80\x02"
                                          "c__builtin__\nset\n",
                                          19)));
  EXPECT_TRUE(LooksLikePickle(std::string("\x80\x02]", 3)));
  EXPECT_FALSE(LooksLikePickle(std::string("\x80\x01]", 3)));
  EXPECT_TRUE(LooksLikeFlightRecorder("\xef\xbb\xbf\n {\"version\": \"2.4\", \"pg_config\": {}}"));
  EXPECT_TRUE(LooksLikeFlightRecorder("{\"version\": \"2.4\", \"entries\" : []}"));
  EXPECT_FALSE(LooksLikeFlightRecorder("{\"entries\": 3, \"msg\": \"step\"}"));  // a JSON-lines log
  EXPECT_FALSE(LooksLikeFlightRecorder("{\"log\":\"x \\\"pg_config\\\": 1\\n\",\"stream\":\"stderr\"}\n"));
  EXPECT_FALSE(LooksLikeFlightRecorder("n1:1:1 [0] NCCL INFO pg_config\n"));
  EXPECT_FALSE(LooksLikeFlightRecorder(""));
}

TEST(FlightRecorder, RankFromDumpName) {
  const std::pair<const char*, int> cases[] = {
      {"nccl_trace_rank_12", 12},
      {"/tmp/nccl_trace_rank_0", 0},
      {"trace_rank3.json", 3},
      {"dumps/rank_3.json.gz", 3},
      {"nccl_trace_rank_5.pkl", 5},
      {"job.tar.gz:dumps/nccl_trace_rank_7", 7},
      {"fr.1", 1},
      {"nccl_trace", -1},
      {"rank3/dump.json", -1},
      {"trace_20241122103015", -1},
      {"", -1},
  };
  for (const auto& c : cases) EXPECT_EQ(RankFromDumpName(c.first), c.second) << c.first;
}

// ---- Dumps among the other inputs ----

const RuleSet& Rules() { return BuiltInRules(); }

const std::string kLog =
    "node-a:1000:1000 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    "node-a:1000:1000 [0] NCCL INFO ncclCommInitRank comm 0x55d0c1a0e9f0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 "
    "busId 1b000 commId 0xabc - Init COMPLETE\n"
    "step 1 | loss 2.31\n";

const FileInfo* FindFile(const JobState& st, const std::string& path) {
  for (const FileInfo& f : st.files()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

TEST(FlightRecorderScan, DumpBesideALogIsReadWhole) {
  TempDir dir;
  std::string dump = dir.Write("nccl_trace_rank_3", PyTorchStyleDump());
  std::string log = dir.Write("rank0.log", kLog);
  for (int jobs : {1, 2}) {
    ScanOptions opts;
    opts.jobs = jobs;
    Analysis a = Analyze(Rules(), {dir.path()}, opts);
    EXPECT_TRUE(a.errors.empty());
    ASSERT_EQ(a.state->flight_recorders().size(), 1u);
    const FrFile& fr = a.state->flight_recorders()[0];
    EXPECT_EQ(fr.path, dump);
    EXPECT_EQ(fr.rank, 3);
    EXPECT_EQ(fr.dump.entries.size(), 2u);
    const FileInfo* df = FindFile(*a.state, dump);
    ASSERT_NE(df, nullptr);
    EXPECT_EQ(df->bytes, PyTorchStyleDump().size());
    EXPECT_EQ(df->lines, 0u);
    EXPECT_TRUE(df->error.empty());
    const FileInfo* lf = FindFile(*a.state, log);
    ASSERT_NE(lf, nullptr);
    EXPECT_EQ(lf->lines, 3u);
    EXPECT_EQ(a.state->counters().lines, 3u);  // the dump's bytes are not lines
    EXPECT_EQ(a.inputs, 2u);
    EXPECT_EQ(a.state->counters().bytes, PyTorchStyleDump().size() + kLog.size());
  }
}

TEST(FlightRecorderScan, JsonDumpAmongLogs) {
  TempDir dir;
  dir.Write("a.log", kLog);
  std::string dump = dir.Write("nccl_trace_rank_1.json",
                               "{\"version\": \"2.4\", \"pg_config\": {}, \"pg_status\": {}, \"entries\": []}\n");
  dir.Write("z.log", kLog);
  Analysis a = Analyze(Rules(), {dir.path()}, ScanOptions());
  EXPECT_TRUE(a.errors.empty());
  ASSERT_EQ(a.state->flight_recorders().size(), 1u);
  EXPECT_EQ(a.state->flight_recorders()[0].rank, 1);
  EXPECT_EQ(a.state->counters().lines, 6u);
  ASSERT_EQ(a.state->files().size(), 3u);
  EXPECT_EQ(a.state->files()[1].path, dump);  // registered in input order
}

TEST(FlightRecorderScan, ForeignPickleIsAFileErrorAndTheRestIsScanned) {
  TempDir dir;
  // pickle.dumps({'entries': [], 'seen': {1}}, protocol=4): a set is EMPTY_SET (0x8f).
  const std::string bad(
      "\x80\x04\x95\x1e\0\0\0\0\0\0\0}\x94(\x8c\x07"
      "entries\x94]\x94\x8c\x04seen\x94\x8f\x94(K\x01\x90u.",
      41);
  std::string dump = dir.Write("nccl_trace_rank_0", bad);
  std::string log = dir.Write("rank1.log", kLog);
  Analysis a = Analyze(Rules(), {dir.path()}, ScanOptions());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0], "cannot read " + dump + ": unsupported pickle opcode 0x8f at byte 33");
  EXPECT_TRUE(a.state->flight_recorders().empty());
  const FileInfo* df = FindFile(*a.state, dump);
  ASSERT_NE(df, nullptr);
  EXPECT_EQ(df->error, "unsupported pickle opcode 0x8f at byte 33");
  EXPECT_GT(df->bytes, 0u);
  const FileInfo* lf = FindFile(*a.state, log);
  ASSERT_NE(lf, nullptr);
  EXPECT_EQ(lf->lines, 3u);
  EXPECT_EQ(std::string(StatusName(a.diagnosis.status)), "partial");
}

TEST(FlightRecorderScan, TruncatedDumpIsAFileError) {
  TempDir dir;
  std::string whole = PyTorchStyleDump();
  std::string dump = dir.Write("nccl_trace_rank_1", whole.substr(0, whole.size() / 2));
  dir.Write("rank0.log", kLog);
  Analysis a = Analyze(Rules(), {dir.path()}, ScanOptions());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0].rfind(
                "cannot read " + dump + ": truncated pickle at byte " + std::to_string(whole.size() / 2) + ": ", 0),
            0u)
      << a.errors[0];
  EXPECT_EQ(a.state->counters().lines, 3u);
}

TEST(FlightRecorderScan, OtherPicklesAreSkippedWhenWalkedAndAnErrorWhenNamed) {
  TempDir dir;
  std::string pkl = dir.Write("optimizer.pkl", P().Op(']').Op('K').Op(1).Op('a').Stop());
  dir.Write("rank0.log", kLog);
  Analysis walked = Analyze(Rules(), {dir.path()}, ScanOptions());
  EXPECT_TRUE(walked.errors.empty());
  EXPECT_EQ(walked.state->skipped().count.at(kSkipBinary), 1u);
  Analysis named = Analyze(Rules(), {pkl}, ScanOptions());
  ASSERT_EQ(named.errors.size(), 1u);
  EXPECT_EQ(named.errors[0],
            "cannot read " + pkl + ": not a Flight Recorder dump: the top-level value is a list, not a dict");
  EXPECT_EQ(named.state->counters().lines, 0u);
}

TEST(FlightRecorderScan, CompressedDump) {
  TempDir dir;
  // gzip through the system tool: the reader decompresses by magic bytes.
  std::string plain = dir.Write("nccl_trace_rank_2", PyTorchStyleDump());
  ASSERT_EQ(std::system(("gzip -n '" + plain + "'").c_str()), 0);
  Analysis a = Analyze(Rules(), {plain + ".gz"}, ScanOptions());
  EXPECT_TRUE(a.errors.empty());
  ASSERT_EQ(a.state->flight_recorders().size(), 1u);
  EXPECT_EQ(a.state->flight_recorders()[0].rank, 2);
  EXPECT_EQ(a.state->flight_recorders()[0].dump.entries.size(), 2u);
}

TEST(FlightRecorderScan, DumpInsideATarArchive) {
  TempDir dir;
  std::string d = dir.Write("job/dumps/nccl_trace_rank_5", PyTorchStyleDump());
  dir.Write("job/rank0.log", kLog);
  ASSERT_EQ(std::system(("tar -C '" + dir.path() + "' -cf '" + dir.path() + "/job.tar' job").c_str()), 0);
  Analysis a = Analyze(Rules(), {dir.path() + "/job.tar"}, ScanOptions());
  EXPECT_TRUE(a.errors.empty());
  ASSERT_EQ(a.state->flight_recorders().size(), 1u);
  EXPECT_EQ(a.state->flight_recorders()[0].path, dir.path() + "/job.tar:job/dumps/nccl_trace_rank_5");
  EXPECT_EQ(a.state->flight_recorders()[0].rank, 5);
  EXPECT_EQ(a.state->counters().lines, 3u);
}

}  // namespace
}  // namespace ncclscan
