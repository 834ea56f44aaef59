// The timeline (`--format trace`) on small hand-built jobs: tracks named per
// rank, the culprit marked and sorted first, Flight Recorder entries as slices
// (never-completed work drawn to the dumps' latest time), watchdog lines as
// slices ending at their time, the two clocks aligned, untimed findings at ts 0,
// hostile text escaped, and the output a valid, deterministic JSON document.
#include "engine/reports/trace_report.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/run/analyze.h"
#include "rules/rule_loader.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

const RuleSet& Rules() { return BuiltInRules(); }

struct Ev {
  std::string ph, name, cat;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = -1;
  std::map<std::string, std::string> args;  // strings and numbers, as text
};

struct Trace {
  std::vector<Ev> events;
  std::map<std::string, std::string> other;
};

// Parses the document (failing the test if it is not valid JSON of the
// expected shape) into events with their string / number arguments.
Trace Parse(const std::string& json) {
  Trace t;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  auto err = parser.parse(json).get(doc);
  EXPECT_EQ(err, simdjson::SUCCESS) << json;
  if (err) return t;
  EXPECT_EQ(std::string(doc["displayTimeUnit"].get_string().value()), "ms");
  for (auto kv : doc["otherData"].get_object()) {
    if (kv.value.is_string()) t.other[std::string(kv.key)] = std::string(kv.value.get_string().value());
  }
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    Ev ev;
    ev.ph = std::string(e["ph"].get_string().value());
    ev.name = std::string(e["name"].get_string().value());
    if (e["cat"].error() == simdjson::SUCCESS) ev.cat = std::string(e["cat"].get_string().value());
    ev.pid = e["pid"].get_int64().value();
    ev.tid = e["tid"].get_int64().value();
    ev.ts = e["ts"].get_double().value();
    if (e["dur"].error() == simdjson::SUCCESS) ev.dur = e["dur"].get_double().value();
    if (ev.ph == "i") {
      EXPECT_EQ(std::string(e["s"].get_string().value()), "t");
    }
    for (auto kv : e["args"].get_object()) {
      std::string v;
      if (kv.value.is_string())
        v = std::string(kv.value.get_string().value());
      else if (kv.value.is_int64())
        v = std::to_string(kv.value.get_int64().value());
      else
        v = simdjson::to_string(kv.value);
      ev.args[std::string(kv.key)] = v;
    }
    t.events.push_back(ev);
  }
  return t;
}

const Ev* Find(const Trace& t, const std::string& ph, const std::string& name, int64_t tid = -1) {
  for (const Ev& e : t.events) {
    if (e.ph == ph && e.name == name && (tid < 0 || e.tid == tid)) return &e;
  }
  return nullptr;
}

std::string ThreadName(const Trace& t, int64_t tid) {
  for (const Ev& e : t.events) {
    if (e.ph == "M" && e.name == "thread_name" && e.tid == tid) return e.args.at("name");
  }
  return "";
}

int64_t ThreadSort(const Trace& t, int64_t tid) {
  for (const Ev& e : t.events) {
    if (e.ph == "M" && e.name == "thread_sort_index" && e.tid == tid) return std::stoll(e.args.at("sort_index"));
  }
  return -1;
}

// 2^60 ns (2006-07-14): times of the form base + k * 2^20 are exact as doubles,
// as FrEntry keeps them.
constexpr double kBase = 1152921504606846976.0;
constexpr double kStep = 1048576.0;  // 1.048576 ms

FrEntry Entry(int64_t seq, const std::string& state, double created, double completed) {
  FrEntry e;
  e.record_id = seq - 1;
  e.pg_id = "0";
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = seq;
  e.op_id = seq;
  e.profiling_name = "nccl:all_reduce";
  e.state = state;
  e.time_created_ns = created;
  e.time_completed_ns = completed;
  e.timeout_ms = 600000;
  e.input_sizes = e.output_sizes = {{4096, 1024}};
  e.input_dtypes = e.output_dtypes = {"Float"};
  return e;
}

// Rank 0 completed seq 1 and hangs in seq 2; rank 1 completed seq 1 and never enqueued seq 2.
void AddDumps(JobState* st) {
  FrFile r0, r1;
  r0.path = "dumps/nccl_trace_rank_0";
  r0.rank = 0;
  r0.dump.entries = {Entry(1, "completed", kBase, kBase + 2 * kStep), Entry(2, "started", kBase + 10 * kStep, -1)};
  r1.path = "dumps/nccl_trace_rank_1";
  r1.rank = 1;
  r1.dump.entries = {Entry(1, "completed", kBase + kStep, kBase + 40 * kStep)};
  st->AddFlightRecorder(r0);
  st->AddFlightRecorder(r1);
}

// The finalized state of one log file holding `text`: the facts the trace
// reads (a watchdog slice comes from the timeout_seq fact, not the finding).
std::unique_ptr<JobState> Scanned(const std::string& text) {
  TempDir dir;
  Analysis a = Analyze(Rules(), {dir.Write("rank.log", text + "\n")}, ScanOptions());
  return std::move(a.state);
}

Finding MakeFinding(const std::string& id, const std::vector<int>& suspects, const std::string& text, double time) {
  Finding f;
  f.rule_id = id;
  f.title = "test finding";
  f.severity = Severity::kError;
  f.suspect_ranks = suspects;
  f.ranks = suspects;
  Evidence e;
  e.text = text;
  e.time = time;
  e.line = 7;
  f.evidence.push_back(e);
  f.fingerprint = "0123456789abcdef";
  return f;
}

TEST(TraceReport, FlightRecorderEntriesAreSlicesPerRank) {
  JobState st(&Rules());
  st.Finalize();
  AddDumps(&st);
  Diagnosis d;
  d.status = Status::kUnknown;
  std::string out = RenderTrace(st, d);
  EXPECT_EQ(out, RenderTrace(st, d));
  Trace t = Parse(out);
  EXPECT_EQ(ThreadName(t, 0), "rank 0");
  EXPECT_EQ(ThreadName(t, 1), "rank 1");
  const Ev* done = Find(t, "X", "all_reduce", 0);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->args.at("pg"), "0 (default_pg)");
  EXPECT_EQ(done->args.at("seq"), "1");
  EXPECT_EQ(done->args.at("op"), "nccl:all_reduce");
  EXPECT_EQ(done->args.at("input_sizes"), "[[4096, 1024]]");
  EXPECT_EQ(done->args.at("dtype"), "Float");
  EXPECT_EQ(done->args.at("state"), "completed");
  EXPECT_DOUBLE_EQ(done->dur, 2 * kStep / 1000);
  // The hung collective is drawn to the dump time: its enqueue plus its 600 s timeout, when its
  // watchdog fired (nothing is recorded while a job hangs).
  const Ev* hung = Find(t, "X", "all_reduce [started]", 0);
  ASSERT_NE(hung, nullptr);
  EXPECT_DOUBLE_EQ(hung->dur, 600000000.0);
  EXPECT_NE(hung->args.at("end").find("never completed"), std::string::npos);
  EXPECT_NE(t.other.at("flight_recorder_dump_time").find("timeout"), std::string::npos);
  // ts 0 is the whole second at or before the first entry, on the epoch clock.
  EXPECT_NE(t.other.at("ts_0_flight_recorder_clock").find("2006-07-14"), std::string::npos);
  EXPECT_EQ(t.other.count("ts_0_log_clock"), 0u);
}

TEST(TraceReport, WithoutATimeoutUnfinishedWorkEndsAtTheLatestTimeInTheDumps) {
  JobState st(&Rules());
  st.Finalize();
  FrFile r0, r1;
  r0.rank = 0;
  r0.dump.entries = {Entry(1, "scheduled", kBase + 10 * kStep, -1)};
  r0.dump.entries[0].timeout_ms = -1;
  r1.rank = 1;
  r1.dump.entries = {Entry(1, "completed", kBase, kBase + 40 * kStep)};
  st.AddFlightRecorder(r0);
  st.AddFlightRecorder(r1);
  Trace t = Parse(RenderTrace(st, Diagnosis{}));
  const Ev* hung = Find(t, "X", "all_reduce [scheduled]", 0);
  ASSERT_NE(hung, nullptr);
  EXPECT_DOUBLE_EQ(hung->dur, 30 * kStep / 1000);
  EXPECT_NE(t.other.at("flight_recorder_dump_time").find("latest time"), std::string::npos);
}

TEST(TraceReport, CulpritTrackIsNamedSortedFirstAndMarked) {
  JobState st(&Rules());
  st.Finalize();
  AddDumps(&st);
  Diagnosis d;
  d.findings.push_back(MakeFinding("TEST-OTHER", {0}, "[Rank 0] something else", -1));
  d.findings.push_back(MakeFinding("TEST-RULE", {5}, "[Rank 5] NCCL WARN boom", -1));
  d.primary = 1;
  d.findings[1].primary = true;
  d.status = Status::kFail;
  d.headline = "boom on rank 5";
  Trace t = Parse(RenderTrace(st, d));
  // Rank 5 wrote nothing and dumped nothing: its track exists because it is the suspect.
  EXPECT_EQ(ThreadName(t, 5), "rank 5 \xe2\x80\x94 suspected culprit (TEST-RULE)");
  EXPECT_LT(ThreadSort(t, 5), ThreadSort(t, 0));
  EXPECT_LT(ThreadSort(t, 5), ThreadSort(t, 1));
  ASSERT_NE(Find(t, "i", "suspected culprit (TEST-RULE)", 5), nullptr);
  const Ev* f = Find(t, "i", "TEST-RULE", 5);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->args.at("text"), "[Rank 5] NCCL WARN boom");
  EXPECT_EQ(f->args.at("at"), "?:7");
  EXPECT_EQ(f->ts, 1);  // untimed: at the start, after the culprit flag (no line) in line order
  EXPECT_NE(f->args.at("note").find("no timestamp"), std::string::npos);
  ASSERT_NE(Find(t, "i", "TEST-OTHER", 0), nullptr);
  EXPECT_EQ(t.other.at("primary"), "TEST-RULE");
  EXPECT_EQ(t.other.at("suspected_ranks"), "5");
}

TEST(TraceReport, WatchdogLineIsASliceEndingAtItsTime) {
  // 700.5 s after Jan 1 00:00: its slice of 600.01 s starts at 100.49 s, which is ts 0 (00:01:40).
  const std::string text =
      "[rank3]:[E101 00:11:40.500000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
      "milliseconds before timing out.";
  std::unique_ptr<JobState> st = Scanned(text);
  Diagnosis d;
  d.findings.push_back(MakeFinding("TORCH-WATCHDOG-TIMEOUT", {3}, text, 700.5));
  Trace t = Parse(RenderTrace(*st, d));
  const Ev* s = Find(t, "X", "ALLREDUCE #12 timed out", 3);
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->dur, 600010000.0);
  EXPECT_EQ(s->args.at("seq"), "12");
  EXPECT_EQ(s->args.at("ran_ms"), "600010");
  const Ev* i = Find(t, "i", "TORCH-WATCHDOG-TIMEOUT", 3);
  ASSERT_NE(i, nullptr);
  EXPECT_DOUBLE_EQ(s->ts + s->dur, i->ts);
  EXPECT_EQ(i->args.count("note"), 0u);
  EXPECT_EQ(t.other.at("ts_0_log_clock").substr(0, 14), "01-01 00:01:40");
}

TEST(TraceReport, DumpsAlignToTheFirstWatchdogLine) {
  const std::string text =
      "[rank0]:[E102 00:00:00.250000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600000 milliseconds before timing "
      "out.";
  std::unique_ptr<JobState> st = Scanned(text);
  AddDumps(st.get());
  Diagnosis d;
  d.findings.push_back(MakeFinding("TORCH-WATCHDOG-TIMEOUT", {0}, text, 86400.25));
  Trace t = Parse(RenderTrace(*st, d));
  const Ev* hung = Find(t, "X", "all_reduce [started]", 0);
  const Ev* line = Find(t, "i", "TORCH-WATCHDOG-TIMEOUT", 0);
  ASSERT_NE(hung, nullptr);
  ASSERT_NE(line, nullptr);
  // The dumps' latest time (the end of the drawn hung collective) sits on the watchdog line.
  EXPECT_DOUBLE_EQ(hung->ts + hung->dur, line->ts);
  EXPECT_NE(t.other.at("clock_alignment").find("watchdog"), std::string::npos);
  EXPECT_EQ(t.other.count("ts_0_log_clock"), 1u);
  EXPECT_EQ(t.other.count("ts_0_flight_recorder_clock"), 1u);
  for (const Ev& e : t.events) EXPECT_GE(e.ts, 0) << e.name;
}

TEST(TraceReport, OverlappingSlicesGoToOverlapThreads) {
  JobState st(&Rules());
  st.Finalize();
  FrFile r0;
  r0.path = "nccl_trace_rank_0";
  r0.rank = 0;
  // Two process groups' collectives in flight at once, crossing: [0, 4] and [2, 6].
  FrEntry a = Entry(1, "completed", kBase, kBase + 4 * kStep);
  FrEntry b = Entry(1, "completed", kBase + 2 * kStep, kBase + 6 * kStep);
  b.pg_id = b.pg_name = "1";
  r0.dump.entries = {a, b};
  st.AddFlightRecorder(r0);
  Diagnosis d;
  Trace t = Parse(RenderTrace(st, d));
  std::vector<int64_t> tids;
  for (const Ev& e : t.events) {
    if (e.ph == "X") tids.push_back(e.tid);
  }
  ASSERT_EQ(tids.size(), 2u);
  EXPECT_NE(tids[0], tids[1]);
  EXPECT_EQ(ThreadName(t, tids[1]), "rank 0 (overlap 1)");
  EXPECT_EQ(ThreadSort(t, tids[1]), ThreadSort(t, 0) + 1);
}

// Two hosts' processes with one pid, in one file: each line goes to the track
// of the process that printed it; the untimed instants of a track follow
// their lines' order, 1 us apart.
TEST(TraceReport, ProcessesSharingAPidKeepTheirTracksAndUntimedLinesKeepTheirOrder) {
  TempDir dir;
  const std::string log =
      "hostA:100:100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "hostA:100:100 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer hostB<1234>\n"
      "hostB:100:100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "hostB:100:100 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer hostA<1234>\n"
      "hostA:100:100 [0] transport/net_socket.cc:1 NCCL WARN NET/Socket : peer hostB<1234> sent an unexpected "
      "message\n";
  Analysis a = Analyze(Rules(), {dir.Write("combined.log", log)}, ScanOptions());
  Trace t = Parse(RenderTrace(*a.state, a.diagnosis));
  std::map<std::string, int64_t> tid_of_thread;
  for (const Ev& e : t.events) {
    if (e.ph == "M" && e.name == "thread_name") tid_of_thread[e.args.at("name")] = e.tid;
  }
  ASSERT_TRUE(tid_of_thread.count("hostA:100")) << RenderTrace(*a.state, a.diagnosis);
  ASSERT_TRUE(tid_of_thread.count("hostB:100"));
  std::map<int64_t, std::vector<std::pair<double, int>>> by_track;  // tid -> (ts, line)
  for (const Ev& e : t.events) {
    if (e.ph != "i" || !e.args.count("at")) continue;
    const std::string at = e.args.at("at");
    by_track[e.tid].emplace_back(e.ts, std::stoi(at.substr(at.rfind(':') + 1)));
  }
  for (const auto& [line, host] : {std::pair<int, const char*>{2, "hostA:100"}, {4, "hostB:100"}}) {
    bool found = false;
    for (const auto& [ts, l] : by_track[tid_of_thread[host]]) found |= l == line;
    EXPECT_TRUE(found) << host << " line " << line;
  }
  for (auto& [tid, evs] : by_track) {
    std::sort(evs.begin(), evs.end());
    for (size_t i = 1; i < evs.size(); ++i) {
      EXPECT_LE(evs[i - 1].second, evs[i].second) << "track " << tid << ": the later line drawn first";
      EXPECT_LT(evs[i - 1].first, evs[i].first) << "track " << tid << ": two untimed lines at one instant";
    }
  }
}

TEST(TraceReport, HostileTextStaysValidJson) {
  JobState st(&Rules());
  st.Finalize();
  Diagnosis d;
  d.findings.push_back(MakeFinding("TEST-RULE", {2}, "quote \" backslash \\ nl \n esc \x1b[31m bad \xff", 1.0));
  d.primary = 0;
  d.headline = "\"}],";
  std::string out = RenderTrace(st, d);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(out.find('\xff'), std::string::npos);
  Trace t = Parse(out);
  const Ev* f = Find(t, "i", "TEST-RULE", 2);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->args.at("text").substr(0, 20), "quote \" backslash \\ ");
  EXPECT_EQ(t.other.at("headline"), "\"}],");
}

// JSON has no inf or NaN: a Flight Recorder entry whose duration_ms is one (a
// pickle BINFLOAT can be) or whose times are not finite numbers gives a trace
// that still parses, the duration left out. (It used to write
// "gpu_duration_ms":inf.)
TEST(TraceReport, NonFiniteNumbersFromADumpStayValidJson) {
  JobState st(&Rules());
  st.Finalize();
  FrFile r0;
  r0.path = "nccl_trace_rank_0";
  r0.rank = 0;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  r0.dump.entries = {Entry(1, "completed", kBase, kBase + kStep), Entry(2, "completed", kBase, kBase + kStep),
                     Entry(3, "completed", kBase, inf), Entry(4, "completed", nan, kBase),
                     Entry(5, "completed", 1e300, kBase)};
  r0.dump.entries[0].duration_ms = inf;
  r0.dump.entries[1].duration_ms = nan;
  st.AddFlightRecorder(r0);
  std::string out = RenderTrace(st, Diagnosis{});
  EXPECT_EQ(out.find("inf"), std::string::npos);
  EXPECT_EQ(out.find("nan"), std::string::npos);
  Trace t = Parse(out);
  size_t slices = 0;
  for (const Ev& e : t.events) {
    if (e.ph != "X") continue;
    ++slices;
    EXPECT_EQ(e.args.count("gpu_duration_ms"), 0u) << e.args.at("seq");
    EXPECT_GE(e.dur, 0);
  }
  EXPECT_EQ(slices, 3u);  // entries 4 and 5 have no start time
}

// Durations that do not fit in int64 nanoseconds (a watchdog line's "ran for"
// of 15 digits, a dump's timeout_ms of 2^62) are drawn capped and say so, never
// wrapped around (signed overflow: the slice came out 3.9e15 us long).
TEST(TraceReport, HugeDurationsAreCappedNotWrapped) {
  const std::string text =
      "[rank0]:[E101 00:11:40.500000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
      "999999999999999 milliseconds before timing out.";
  std::unique_ptr<JobState> st = Scanned(text);
  Diagnosis d;
  d.findings.push_back(MakeFinding("TORCH-WATCHDOG-TIMEOUT", {0}, text, 700.5));
  Trace t = Parse(RenderTrace(*st, d));
  const Ev* s = Find(t, "X", "ALLREDUCE #6 timed out", 0);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->args.at("ran_ms"), "999999999999999");
  EXPECT_DOUBLE_EQ(s->dur, 1e14);  // 10^17 ns in us
  EXPECT_NE(s->args.count("capped"), 0u);
  const Ev* i = Find(t, "i", "TORCH-WATCHDOG-TIMEOUT", 0);
  ASSERT_NE(i, nullptr);
  EXPECT_DOUBLE_EQ(s->ts + s->dur, i->ts);

  JobState fr(&Rules());
  fr.Finalize();
  FrFile r0;
  r0.rank = 0;
  r0.dump.entries = {Entry(1, "started", kBase, -1), Entry(2, "completed", kBase, kBase + 4 * kStep)};
  r0.dump.entries[0].timeout_ms = int64_t{1} << 62;
  fr.AddFlightRecorder(r0);
  Trace ft = Parse(RenderTrace(fr, Diagnosis{}));
  const Ev* hung = Find(ft, "X", "all_reduce [started]", 0);
  ASSERT_NE(hung, nullptr);
  EXPECT_DOUBLE_EQ(hung->dur, 1e14);
}

// Slices on every thread nest (what a trace viewer requires).
void ExpectSlicesNest(const Trace& t) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> by_thread;
  for (const Ev& e : t.events) {
    if (e.ph == "X") by_thread[{e.pid, e.tid}].push_back({e.ts, -(e.ts + e.dur)});
  }
  for (auto& kv : by_thread) {
    std::sort(kv.second.begin(), kv.second.end());
    std::vector<double> open;
    for (const auto& sl : kv.second) {
      double end = -sl.second;
      while (!open.empty() && open.back() <= sl.first) open.pop_back();
      ASSERT_TRUE(open.empty() || open.back() >= end) << "thread " << kv.first.second << " at " << sl.first;
      open.push_back(end);
    }
  }
}

// Large jobs stay linear: 100k ranks in one interleaved log (each evidence
// line's track used to be found by scanning every rank per rank), and 100k
// Flight Recorder entries of one rank that overlap without nesting (each used
// to scan every lane). The trace is valid: every rank's track, nested slices.
TEST(TraceReport, HundredThousandRanksAndOverlapsAreValid) {
  constexpr int kRanks = 100000;
  TempDir dir;
  std::string log;
  for (int r = 0; r < kRanks; ++r) {
    log += "[rank" + std::to_string(r) + "]:[E1122 11:20:32.133529328 ProcessGroupNCCL.cpp:616] [Rank " +
           std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1, "
           "NumelOut=1, Timeout(ms)=600000) ran for 600006 milliseconds before timing out.\n";
  }
  ScanOptions opts;
  Analysis a = Analyze(Rules(), {dir.Write("job.log", log)}, opts);
  Trace t = Parse(RenderTrace(*a.state, a.diagnosis));
  size_t rank_threads = 0;
  for (const Ev& e : t.events) rank_threads += e.ph == "M" && e.name == "thread_name" && e.tid < kRanks;
  EXPECT_EQ(rank_threads, static_cast<size_t>(kRanks));
  ExpectSlicesNest(t);

  // Dumps of rank 0 read several times over (kMaxTraceEntriesPerDump each).
  JobState st(&Rules());
  st.Finalize();
  const int dumps = kRanks / static_cast<int>(kMaxTraceEntriesPerDump);
  for (int k = 0; k < dumps; ++k) {
    FrFile r0;
    r0.rank = 0;
    for (int i = 0; i < static_cast<int>(kMaxTraceEntriesPerDump); ++i) {
      const int g = k * static_cast<int>(kMaxTraceEntriesPerDump) + i;
      r0.dump.entries.push_back(Entry(g + 1, "completed", kBase + g * kStep, kBase + (kRanks + g) * kStep));
    }
    st.AddFlightRecorder(r0);
  }
  Trace ft = Parse(RenderTrace(st, Diagnosis{}));
  size_t slices = 0, held = 0;
  for (const Ev& e : ft.events) slices += e.ph == "X";
  // Every entry held is a slice (the hold bound, kMaxFrEntriesHeld, keeps the
  // newest few of the dumps past it).
  for (const FrFile& f : st.flight_recorders()) held += f.dump.entries.size();
  EXPECT_GE(held, kMaxFrEntriesHeld);
  EXPECT_EQ(slices, held);
  ExpectSlicesNest(ft);
}

}  // namespace
}  // namespace ncclscan
