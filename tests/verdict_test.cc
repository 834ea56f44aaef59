// The verdict (engine/models/diagnosis.cc RefineStatus, engine/models/story.cc): what the run
// did — healthy, hung, crashed, failed, incomplete — and which finding leads,
// end to end from log text. Each case is a table row: a log, the status, the
// primary rule and its suspect ranks, and why.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

std::string Nccl(int rank, const std::string& msg) {
  return "node-a:" + std::to_string(100 + rank) + ":" + std::to_string(100 + rank) + " [" + std::to_string(rank) +
         "] NCCL INFO " + msg + "\n";
}

std::string InitLines(int rank, int nranks, bool complete) {
  std::string s = Nccl(rank, "NCCL version 2.21.5+cuda12.4");
  s += Nccl(rank, "Bootstrap : Using eth0:10.0.0.1<0>");
  s += Nccl(rank, "ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
                      " nranks " + std::to_string(nranks) + " cudaDev " + std::to_string(rank) + " nvmlDev 0 busId " +
                      std::to_string(20 + rank) + "000 commId 0xabc - Init START");
  s +=
      Nccl(rank, "Channel 00/0 : " + std::to_string(rank) + "[" + std::to_string(rank) + "] -> " +
                     std::to_string((rank + 1) % nranks) + "[" + std::to_string((rank + 1) % nranks) + "] via P2P/IPC");
  if (complete) {
    s += Nccl(rank, "ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
                        " nranks " + std::to_string(nranks) + " cudaDev " + std::to_string(rank) + " nvmlDev 0 busId " +
                        std::to_string(20 + rank) + "000 commId 0xabc - Init COMPLETE");
  }
  return s;
}

std::string Timeout(int rank, int seq) {
  return "[rank" + std::to_string(rank) + "]:[E1122 10:15:3" + std::to_string(rank) +
         ".000000000 ProcessGroupNCCL.cpp:616] [Rank " + std::to_string(rank) +
         "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing "
         "out.\n";
}

std::string Coll(int rank, int opcount) {
  return Nccl(rank, "AllReduce: opCount " + std::to_string(opcount) +
                        " sendbuff 0x7f00 recvbuff 0x7f00 count 1 datatype 7 op 0 root 0 comm 0x55d0c1a0e9f" +
                        std::to_string(rank) + " [nranks=2] stream 0x1");
}

std::string Destroy(int rank) {
  return Nccl(rank, "comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
                        " nranks 2 cudaDev " + std::to_string(rank) + " busId " + std::to_string(20 + rank) +
                        "000 - Destroy COMPLETE");
}

// Rank `rank`'s own collective timed out (PyTorch 2.5+ wording).
std::string DumpSignal(int rank) {
  const std::string r = std::to_string(rank);
  return "[rank" + r + "]:[E801 01:01:39.254662130 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank " +
         r +
         "] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump "
         "the debug info. Last enqueued NCCL work: 9, last completed NCCL work: 6.\n";
}

// PyTorch's collective fingerprints under TORCH_DISTRIBUTED_DEBUG=DETAIL disagree: it raises.
const std::string kMismatch =
    "[rank0]: RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=1, OpType=ALLREDUCE, TensorShape=[20, 10], TensorDtypes=Float), but Rank 1 "
    "is "
    "running collective: CollectiveFingerPrint(SequenceNumber=1, OpType=REDUCE, TensorShape=[20, 10], "
    "TensorDtypes=Float).\n";

// Two nodes on NCCL's Socket transport, both initialised (no end shown).
const std::string kSocketTwoNodes =
    "node-a:1001:1001 [0] NCCL INFO NET/IB : No device found.\n"
    "node-a:1001:1001 [0] NCCL INFO Using network Socket\n"
    "node-b:2001:2001 [0] NCCL INFO NET/IB : No device found.\n"
    "node-b:2001:2001 [0] NCCL INFO Using network Socket\n"
    "node-a:1001:1050 [0] NCCL INFO comm 0x55a1 rank 0 nranks 2 cudaDev 0 busId 1b000 commId 0x7e11 - Init COMPLETE\n"
    "node-b:2001:2050 [0] NCCL INFO comm 0x55b1 rank 1 nranks 2 cudaDev 0 busId 1b000 commId 0x7e11 - Init COMPLETE\n";

struct Row {
  const char* name;
  std::vector<std::string> files;  // one log per entry
  const char* status;
  const char* primary;   // "" for none
  const char* suspects;  // compact ranks of the primary's suspects
};

std::string Ranks(const std::vector<int>& v) {
  std::string s;
  for (int r : v) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

class Verdict : public ::testing::TestWithParam<Row> {};

TEST_P(Verdict, StatusAndPrimary) {
  const Row& row = GetParam();
  TempDir dir;
  std::vector<std::string> paths;
  for (size_t i = 0; i < row.files.size(); ++i)
    paths.push_back(dir.Write("r" + std::to_string(i) + ".log", row.files[i]));
  ScanOptions opts;
  opts.jobs = 1;
  Analysis a = Analyze(BuiltInRules(), paths, opts);
  EXPECT_EQ(StatusName(a.diagnosis.status), std::string(row.status));
  const Finding* p = a.diagnosis.primary >= 0 ? &a.diagnosis.findings[a.diagnosis.primary] : nullptr;
  EXPECT_EQ(p ? p->rule_id : "", row.primary);
  if (p) {
    EXPECT_EQ(Ranks(p->suspect_ranks), row.suspects);
  }
}

const std::string kSegv =
    "[node-a:102:0:102] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)\n";

INSTANTIATE_TEST_SUITE_P(
    Table, Verdict,
    ::testing::Values(
        // Every rank initialised and nothing wrong: healthy, no primary.
        // Every rank completed init and tore its communicator down: evidence of health.
        Row{"healthy", {InitLines(0, 2, true) + Destroy(0), InitLines(1, 2, true) + Destroy(1)}, "ok", "", ""},
        // Init completed everywhere and the logs stop: the run's end is not in them
        // (DESIGN §10: healthy needs positive evidence).
        Row{"init_then_nothing",
            {InitLines(0, 2, true), InitLines(1, 2, true)},
            "incomplete",
            "RUN-STOPPED-IN-COLLECTIVES",
            ""},
        // One rank tore its communicator down, the other stopped after init: the
        // run's end is shown for one rank only (RUN-STOPPED-IN-COLLECTIVES stays
        // silent once any process shows its end).
        Row{"ended_on_one_rank_only",
            {InitLines(0, 2, true) + Destroy(0), InitLines(1, 2, true)},
            "incomplete",
            "RUN-ENDED-ON-SOME-RANKS",
            ""},
        // A warning found on the way does not make a run that stops short of
        // its end "warn": the run did not finish in what was collected; the
        // warning stays the primary (it may be why).
        Row{"warning_beside_a_stopped_story_is_incomplete",
            {InitLines(0, 2, true) + Nccl(0, "NCCL_P2P_DISABLE set by environment to 1"), InitLines(1, 2, true)},
            "incomplete",
            "NCCL-P2P-DISABLED-ENV",
            "0"},
        Row{"warning_beside_the_end_stays_warn",
            {InitLines(0, 2, true) + Nccl(0, "NCCL_P2P_DISABLE set by environment to 1") + Destroy(0),
             InitLines(1, 2, true) + Destroy(1)},
            "warn",
            "NCCL-P2P-DISABLED-ENV",
            "0"},
        // A flight-recorder dump signal exists only because a collective timed
        // out: with no watchdog line in the excerpt it is what shows the hang
        // (corpus prime-rl-3186); beside the watchdog line it is a symptom.
        Row{"dump_signal_alone_is_a_hang", {InitLines(0, 1, true) + DumpSignal(0)}, "hung", "TORCH-DUMP-SIGNAL", ""},
        // The rank that signalled its own timeout waited; the rank that printed
        // nothing after init is the one it waited for.
        Row{"dump_signal_names_the_silent_rank",
            {InitLines(0, 2, true), InitLines(1, 2, true) + DumpSignal(1)},
            "hung",
            "DIVERGENT-RANK",
            "0"},
        Row{"dump_signal_below_the_watchdog_timeout",
            {InitLines(0, 2, true) + Timeout(0, 7) + DumpSignal(0), InitLines(1, 2, true) + Timeout(1, 7)},
            "hung",
            "TORCH-WATCHDOG-TIMEOUT",
            ""},
        // One rank's Abort COMPLETE alone (an 8-rank communicator): what a rank
        // does after its own error as much as at shutdown, so no end the verdict
        // can read; several ranks aborting with no error read is the shutdown.
        Row{"one_rank_abort_alone_shows_no_end",
            {Nccl(7, "comm 0x8312280 rank 7 nranks 8 cudaDev 7 busId c9000 - Abort COMPLETE")},
            "incomplete",
            "RUN-NO-PROGRESS-SHOWN",
            ""},
        Row{"every_rank_aborts_at_shutdown",
            {Nccl(0, "comm 0x8312280 rank 0 nranks 2 cudaDev 0 busId 1b000 - Abort COMPLETE"),
             Nccl(1, "comm 0x8312290 rank 1 nranks 2 cudaDev 1 busId 1c000 - Abort COMPLETE")},
            "ok",
            "",
            ""},
        // Only PyTorch's tear-down message survived: the process is being taken
        // down after a failed or timed-out collective, never a mere warning
        // (corpus prodigy-35).
        Row{"teardown_lines_alone_are_no_warning",
            {"[rank4]:[E114 15:08:00.554406629 ProcessGroupNCCL.cpp:621] [Rank 4] Some NCCL operations have failed or "
             "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
             "corrupted/incomplete data.\n"},
            "hung",
            "TORCH-TEARDOWN",
            ""},
        // PyTorch's own words, none of which shows a stage, an error or an end.
        Row{"no_progress_shown",
            {"[rank0]:[W101 00:00:01.000000000 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0] using GPU 0 "
             "to perform barrier as devices used by this process are currently unknown.\n"},
            "incomplete",
            "RUN-NO-PROGRESS-SHOWN",
            ""},
        // A program's own lines behind the ranks' prefixes (corpus torchtitan-1618):
        // those ranks ran, so the verdict is incomplete; the same lines with no
        // prefix are nothing recognised.
        Row{"rank_prefixed_program_lines",
            {"[rank0]:[titan] 2025-08-21 11:19:52,951 - root - INFO - step 87 start\n",
             "[rank1]:[titan] 2025-08-21 11:19:52,993 - root - INFO - step 89 start\n"},
            "incomplete",
            "RUN-NO-PROGRESS-SHOWN",
            ""},
        Row{"program_lines_only",
            {"[titan] 2025-08-21 11:19:52,951 - root - INFO - step 87 start\n"},
            "unknown",
            "",
            ""},
        // nccl-tests' banner and device table, printed before init, and nothing after:
        // no result, no NCCL line (corpus nccl-tests-213: two jobs that each printed it).
        Row{"nccltests_banner_only",
            {"# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n#\n"
             "# Using devices\n#  Rank  0 Group  0 Pid    798 on       hw14 device  0 [0x0f] NVIDIA H800\n"
             "#  Rank  1 Group  0 Pid    798 on       hw14 device  1 [0x34] NVIDIA H800\n"},
            "incomplete",
            "RUN-NO-PROGRESS-SHOWN",
            ""},
        // Rank 1 timed out fetching the ncclUniqueId only rank 0 writes, and rank 0
        // left no trace: waiting for rank 0 is not a failure of rank 1's own.
        Row{"store_wait_for_rank0",
            {"[1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by "
             "key '0', but store->get('0') got error: Socket Timeout\n"},
            "hung",
            "CONSENSUS-RANK0-ALONE",
            "0"},
        // Open MPI's launcher names the rank a signal killed: the culprit.
        Row{"mpirun_signal",
            {InitLines(0, 2, true) + InitLines(1, 2, true) +
             "mpirun noticed that process rank 1 with PID 101 on node node-a exited on signal 9 (Killed).\n"},
            "crashed",
            "MPI-PROCESS-SIGNALED",
            "1"},
        // Ranks trained, then torchrun stopped a worker because the other failed,
        // and no line read says why (the failed worker's output was not collected):
        // the run ended abnormally, a failure with nobody named; never "ok".
        Row{"workers_stopped_cause_unread",
            {"[rank0]: epoch 0 step 200 loss 2.1032\n[rank1]: epoch 0 step 200 loss 2.0911\n"
             "W1122 10:41:07.512000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4301 "
             "closing signal SIGTERM\n"},
            "crashed",
            "RUN-ENDED-ABNORMALLY",
            ""},
        // torchrun's failure table with its rank row and not its exit code (a cut
        // paste): the one rank it lists is named.
        Row{"failure_table_rank_row_only",
            {"train.py FAILED\n------------------------------------------------------------\nFailures:\n"
             "[1]:\n  time      : 2021-11-26_21:07:21\n  host      : f10de8a8e6e4\n"
             "  rank      : 1 (local_rank: 1)\n"},
            "crashed",
            "RUN-ENDED-ABNORMALLY",
            "1"},
        // The same stop after rank 1's timeout: the timeout is read (rank 0, silent,
        // is the suspect), and the abnormal end adds nothing.
        Row{"workers_stopped_after_a_timeout",
            {"[rank1]:[E1122 10:41:05.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
             "ran for 600012 milliseconds before timing out.\n"
             "W1122 10:41:07.512000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4301 "
             "closing signal SIGTERM\n"},
            "hung",
            "CONSENSUS-RANK0-ALONE",
            "0"},
        // A kernel log of corrected PCIe errors alone (a context warning): it says
        // nothing of the run, so nothing is "ok".
        Row{"corrected_pcie_errors_only",
            {"[  +0.000012] pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
             "(Transmitter ID)\n[  +0.000864] pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0\n"},
            "incomplete",
            "RUN-NO-PROGRESS-SHOWN",
            ""},
        // One rank of two completed init and nothing else is known: no evidence of health.
        Row{"half_initialised", {InitLines(0, 2, true)}, "incomplete", "RUN-STOPPED-IN-INIT", ""},
        // Every log stops inside init with no error: the run did not finish.
        Row{"stopped_in_init",
            {InitLines(0, 2, false), InitLines(1, 2, false)},
            "incomplete",
            "RUN-STOPPED-IN-INIT",
            ""},
        // Ranks 1-3 time out in a one-element collective and rank 0 says nothing;
        // no world size is printed: rank 0 is inferred (ranks count from 0) and
        // leads, as the culprit, above the victims' timeouts; the run hung.
        Row{"silent_rank0", {Timeout(1, 2) + Timeout(2, 2) + Timeout(3, 2)}, "hung", "CONSENSUS-NEVER-JOINED", "0"},
        // The same in the process group's first collective (SeqNum 1, where PyTorch
        // also brings the NCCL communicator up): a silent rank 2 and a
        // communicator that never came up look alike from the reporters, and no
        // world size is stated: nobody is named by elimination.
        Row{"first_collective_inferred",
            {Timeout(0, 1) + Timeout(1, 1) + Timeout(3, 1) + Timeout(4, 1)},
            "hung",
            "TORCH-WATCHDOG-TIMEOUT",
            ""},
        // With the world size stated, the rank that never joined it is named.
        Row{"first_collective_stated",
            {"WORLD_SIZE=5\n" + Timeout(0, 1) + Timeout(1, 1) + Timeout(3, 1) + Timeout(4, 1)},
            "hung",
            "CONSENSUS-NEVER-JOINED",
            "2"},
        // The world size from an environment dump (WORLD-SIZE-STATED): rank 3,
        // above every reporter, is found by elimination too.
        Row{"world_size_from_env",
            {"WORLD_SIZE=4\n" + Timeout(0, 2) + Timeout(1, 2) + Timeout(2, 2)},
            "hung",
            "CONSENSUS-NEVER-JOINED",
            "3"},
        // Every rank printed its init; ranks 0-2 time out and rank 3, whose lines
        // carry no time, never does: the one rank that went quiet is named.
        Row{"silent_rank_untimed",
            {InitLines(0, 4, true) + Timeout(0, 2), InitLines(1, 4, true) + Timeout(1, 2),
             InitLines(2, 4, true) + Timeout(2, 2), InitLines(3, 4, true)},
            "hung",
            "CONSENSUS-DIED-FIRST",
            "3"},
        // Half the ranks quiet: their logs end early, not their work; nobody named.
        Row{"half_quiet_untimed",
            {InitLines(0, 4, true) + Timeout(0, 2), InitLines(1, 4, true) + Timeout(1, 2), InitLines(2, 4, true),
             InitLines(3, 4, true)},
            "hung",
            "TORCH-WATCHDOG-TIMEOUT",
            ""},
        // torchrun's failure table alone: the worker a signal killed (-9) is the
        // suspect and the run crashed; the one its watchdog aborted (-6) is not.
        Row{"failure_table_sigkill",
            {"torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nFailures:\n[1]:\n"
             "  time      : 2024-01-22_10:15:32\n  host      : node-3\n  rank      : 4 (local_rank: 0)\n"
             "  exitcode  : -6 (pid: 4241)\nRoot Cause (first observed failure):\n[0]:\n"
             "  time      : 2024-01-22_10:15:30\n  host      : node-3\n  rank      : 5 (local_rank: 1)\n"
             "  exitcode  : -9 (pid: 4242)\n"},
            "crashed",
            "ELASTIC-CHILD-KILLED",
            "5"},
        // The culprit the consensus model infers goes before a victim's error of
        // the same severity (here a connection its peer closed).
        Row{"culprit_before_victims_error",
            {Timeout(1, 2) + Timeout(2, 2) + Timeout(3, 2) +
             "[rank1]: node-a:101:130 [1] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote "
             "peer 10.9.9.9<51159>\n"},
            "hung",
            "CONSENSUS-NEVER-JOINED",
            "0"},
        // One reporter alone says nothing by elimination about the ranks whose
        // logs are absent; but rank 0, silent, is named from its role (one-process
        // work runs there): CONSENSUS-RANK0-ALONE.
        Row{"one_reporter", {Timeout(3, 2)}, "hung", "CONSENSUS-RANK0-ALONE", "0"},
        // Several silent ranks besides rank 0: elimination alone would name them
        // all; rank 0's role names it alone.
        Row{"silent_rank0_and_others",
            {Timeout(2, 2) + Timeout(5, 2) + Timeout(6, 2) + Timeout(7, 2)},
            "hung",
            "CONSENSUS-RANK0-ALONE",
            "0"},
        // A segfault on rank 2 before the others time out: crashed, and the
        // crash leads (critical, root) over the victims' timeouts.
        Row{"segfault",
            {InitLines(0, 3, true) + InitLines(1, 3, true) + InitLines(2, 3, true) + kSegv + Timeout(0, 7) +
             Timeout(1, 7)},
            "crashed",
            "CRASH-SIGNAL-CAUGHT",
            "2"},
        // A crash alone, in init: crashed, not incomplete.
        Row{"segfault_in_init",
            {InitLines(0, 2, false) + InitLines(1, 2, false) + kSegv},
            "crashed",
            "CRASH-SIGNAL-CAUGHT",
            ""},
        // The watchdog seen only as C++ frames: a timeout, the run hung.
        Row{"watchdog_frames",
            {InitLines(0, 2, true) + InitLines(1, 2, true) +
             "Exception raised from checkTimeout at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:616 "
             "(most recent call first):\n"},
            "hung",
            "TORCH-WATCHDOG-FRAMES",
            ""},
        // The OOM killer (Slurm's words) while the others time out: crashed.
        Row{"oom_killed",
            {InitLines(0, 2, true) + InitLines(1, 2, true) + "srun: error: gpu-node-7: task 1: Out Of Memory\n" +
             Timeout(0, 9)},
            "crashed",
            "CRASH-OOM-KILLED",
            ""},
        // Local ranks closing their proxy connections at the end of a healthy
        // run: NCCL's INFO at every teardown, context only.
        Row{"service_thread_closed_at_teardown",
            {InitLines(0, 2, true) + InitLines(1, 2, true) +
             "node-a:100:120 [0] NCCL INFO [Service thread] Connection closed by localRank 1\n" + Destroy(0) +
             Destroy(1)},
            "ok",
            "",
            ""},
        // A second communicator's init starts on every rank and completes on
        // none: the run is inside init although the first one completed.
        Row{"second_comm_init_open",
            {InitLines(0, 2, true) + InitLines(1, 2, true) +
             Nccl(0,
                  "ncclCommInitRank comm 0x77 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 20000 commId 0xdef - Init "
                  "START") +
             Nccl(1,
                  "ncclCommInitRank comm 0x78 rank 1 nranks 2 cudaDev 1 nvmlDev 0 busId 21000 commId 0xdef - Init "
                  "START")},
            "incomplete",
            "RUN-STOPPED-IN-INIT",
            ""},
        // One rank reports its peer closed the connection; the peer is another
        // host of this job: the peer is the suspect, the reporter a victim.
        Row{"closed_by_peer_host",
            {InitLines(0, 2, true) +
                 "node-a:100:130 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
                 "node-b<51159>\n",
             "node-b:101:101 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"},
            "fail",
            "PEER-CLOSED-STORM",
            "1"},
        // ... but during init an address no process of the job owns names no
        // one: it may be a foreign connection to the bootstrap port (nccl#1612).
        Row{"closed_by_foreign_address_in_init",
            {InitLines(0, 2, false) + InitLines(1, 2, false) +
             "node-a:100:130 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
             "10.9.9.9<51159>\n"},
            "fail",
            "NCCL-CONN-CLOSED",
            ""},
        // A check that compares the ranks and raises (stops_run: error) ends the run
        // with an error: "fail", not "hung" ...
        Row{"fingerprint_mismatch_raised",
            {InitLines(0, 2, true) + InitLines(1, 2, true) + kMismatch},
            "fail",
            "TORCH-COLLECTIVE-MISMATCH",
            "0"},
        // ... unless a watchdog timeout shows that the ranks waited all the same.
        Row{"fingerprint_mismatch_after_a_timeout",
            {InitLines(0, 2, true) + InitLines(1, 2, true) + kMismatch + Timeout(1, 2)},
            "hung",
            "TORCH-COLLECTIVE-MISMATCH",
            "0"},
        // TCP sockets between nodes slow a job, they do not stop one: where the
        // logs stop with nothing at error, the stop leads and the socket is context ...
        Row{"socket_between_nodes_then_the_logs_stop",
            {kSocketTwoNodes + "node-b:2001:2001 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 "
                               "count 1024 datatype 7 op 0 root 0 comm 0x55b1 [nranks=2] stream 0x5600\n"},
            "incomplete",
            "RUN-STOPPED-IN-COLLECTIVES",
            ""},
        // ... unless a faster transport failed first: that is why sockets were taken.
        Row{"socket_after_a_failed_net_plugin_stays_the_headline",
            {"node-a:1001:1001 [0] nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI aws-ofi-nccl initialization "
             "failed\n" +
             kSocketTwoNodes},
            "incomplete",
            "NET-SOCKET-MULTINODE",
            "0,1"},
        // After Init COMPLETE the connection was the running job's: its far end
        // is the suspect host even though its logs were not collected.
        Row{"closed_by_uncollected_peer_while_running",
            {InitLines(0, 2, true) + InitLines(1, 2, true) +
             "node-a:100:130 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
             "10.9.9.9<51159>\n"},
            "fail",
            "PEER-CLOSED-STORM",
            ""},
        // nccl-tests: banner and Init COMPLETE, no result: stopped in the first collective.
        Row{"nccltests_no_result",
            {"#  Rank  0 Group  0 Pid    100 on     node-a device  0 [0x1b] NVIDIA H100\n"
             "#  Rank  1 Group  0 Pid    101 on     node-a device  1 [0x2c] NVIDIA H100\n" +
             InitLines(0, 2, true) + InitLines(1, 2, true)},
            "incomplete",
            "RUN-STOPPED-IN-INIT",
            ""},
        // ... and with its results, a healthy run.
        Row{"nccltests_results",
            {"#  Rank  0 Group  0 Pid    100 on     node-a device  0 [0x1b] NVIDIA H100\n" + InitLines(0, 2, true) +
             InitLines(1, 2, true) +
             "     8388608       2097152     float     sum      -1    245.1   34.22   64.17      0    243.9   34.39   "
             "64.48      0\n# Avg bus bandwidth    : 64.3\n"},
            "ok",
            "",
            ""},
        // Collectives traced on every rank, then the logs stop: no end of the run shown.
        Row{"stopped_in_collectives",
            {InitLines(0, 2, true) + Coll(0, 0) + Coll(0, 1), InitLines(1, 2, true) + Coll(1, 0) + Coll(1, 1)},
            "incomplete",
            "RUN-STOPPED-IN-COLLECTIVES",
            ""},
        // ... the same with the communicators destroyed: a run that ended.
        Row{"collectives_then_destroy",
            {InitLines(0, 2, true) + Coll(0, 0) + Coll(0, 1) + Destroy(0),
             InitLines(1, 2, true) + Coll(1, 0) + Coll(1, 1) + Destroy(1)},
            "ok",
            "",
            ""},
        // ... or with PyTorch's warning at program exit, which every process prints.
        Row{"collectives_then_program_exit",
            {InitLines(0, 2, true) + Coll(0, 0) + Coll(0, 1) +
                 "[rank0]:[W205 18:00:34.953145631 ProcessGroupNCCL.cpp:1538] Warning: WARNING: "
                 "destroy_process_group() was not called before program exit, which can leak resources.\n",
             InitLines(1, 2, true) + Coll(1, 0) + Coll(1, 1) +
                 "[rank1]:[W205 18:00:34.953145632 ProcessGroupNCCL.cpp:1538] Warning: WARNING: "
                 "destroy_process_group() was not called before program exit, which can leak resources.\n"},
            "ok",
            "",
            ""},
        // ... but where only rank 0 shows it, rank 1's end is not in the logs.
        Row{"collectives_then_program_exit_on_one_rank",
            {InitLines(0, 2, true) + Coll(0, 0) + Coll(0, 1) +
                 "[rank0]:[W205 18:00:34.953145631 ProcessGroupNCCL.cpp:1538] Warning: WARNING: "
                 "destroy_process_group() was not called before program exit, which can leak resources.\n",
             InitLines(1, 2, true) + Coll(1, 0) + Coll(1, 1)},
            "incomplete",
            "RUN-ENDED-ON-SOME-RANKS",
            ""},
        // ... but a watchdog timeout is the run's story, not the logs' end.
        Row{"collectives_then_timeout",
            {InitLines(0, 2, true) + Coll(0, 0) + Timeout(0, 1), InitLines(1, 2, true) + Coll(1, 0) + Timeout(1, 1)},
            "hung",
            "TORCH-WATCHDOG-TIMEOUT",
            ""}),
    [](const ::testing::TestParamInfo<Row>& i) { return std::string(i.param.name); });

// The far end of a connection closed while the job ran is named as a host,
// also when no log of that host was collected; during init it is not.
TEST(Verdict, TheFarEndOfAConnectionClosedWhileRunningIsTheSuspectHost) {
  TempDir dir;
  ScanOptions opts;
  opts.jobs = 1;
  const std::string warn =
      "node-a:100:130 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
      "gpu-7.cluster.local<51159>\n";
  Analysis running = Analyze(BuiltInRules(), {dir.Write("run.log", InitLines(0, 2, true) + warn)}, opts);
  ASSERT_GE(running.diagnosis.primary, 0);
  const Finding& p = running.diagnosis.findings[running.diagnosis.primary];
  EXPECT_EQ(p.suspect_hosts, std::vector<std::string>{"gpu-7"});
  EXPECT_TRUE(p.suspect_ranks.empty());
  Analysis init = Analyze(BuiltInRules(), {dir.Write("init.log", InitLines(0, 2, false) + warn)}, opts);
  ASSERT_GE(init.diagnosis.primary, 0);
  EXPECT_TRUE(init.diagnosis.findings[init.diagnosis.primary].suspect_hosts.empty());
  // Init COMPLETE printed after the report does not make the report a running job's.
  const std::string complete = Nccl(0,
                                    "ncclCommInitRank comm 0x55d0c1a0e9f0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
                                    "1b000 commId 0xabc - Init COMPLETE");
  Analysis later = Analyze(BuiltInRules(), {dir.Write("later.log", InitLines(0, 2, false) + warn + complete)}, opts);
  ASSERT_GE(later.diagnosis.primary, 0);
  EXPECT_TRUE(later.diagnosis.findings[later.diagnosis.primary].suspect_hosts.empty());
}

// Where every rank's last traced collective is its first (opCount 0), the
// finding says the run stopped in its first collective, with that stage's
// causes; further into the run it does not.
TEST(Verdict, StoppedInTheFirstCollectiveIsSaid) {
  TempDir dir;
  ScanOptions opts;
  opts.jobs = 1;
  auto explain = [&](int last) {
    Analysis a = Analyze(BuiltInRules(),
                         {dir.Write("a" + std::to_string(last) + ".log", InitLines(0, 2, true) + Coll(0, last)),
                          dir.Write("b" + std::to_string(last) + ".log", InitLines(1, 2, true) + Coll(1, last))},
                         opts);
    EXPECT_EQ(std::string(StatusName(a.diagnosis.status)), "incomplete");
    return a.diagnosis.primary >= 0 ? a.diagnosis.findings[a.diagnosis.primary].explanation : std::string();
  };
  EXPECT_NE(explain(0).find("stopped in its first collective"), std::string::npos);
  EXPECT_EQ(explain(5).find("first collective"), std::string::npos);
}

// A bare "NCCL version" banner (no host:pid prefix, as NCCL prints it) is no
// process: it neither counts among the processes that stopped nor lags
// behind them (the text once said ":-1 stopped earlier, at the version banner").
TEST(Verdict, ABareBannerIsNoProcessThatStoppedEarlier) {
  TempDir dir;
  ScanOptions opts;
  opts.jobs = 1;
  std::string log = "NCCL version 2.21.5+cuda12.4\n";
  for (int r = 0; r < 2; ++r) log += Nccl(r, "Bootstrap : Using eth0:10.0.0.1<0>");
  Analysis a = Analyze(BuiltInRules(), {dir.Write("job.log", log)}, opts);
  ASSERT_GE(a.diagnosis.primary, 0);
  const Finding& f = a.diagnosis.findings[a.diagnosis.primary];
  EXPECT_EQ(f.rule_id, "RUN-STOPPED-IN-INIT");
  EXPECT_EQ(f.explanation.find("stopped earlier"), std::string::npos) << f.explanation;
  EXPECT_NE(f.explanation.find("The logs of 2 process(es)"), std::string::npos) << f.explanation;
}

// A check that breaks an invariant (here an injected throw) is named in the
// diagnosis and the rest of it stands; a clean result is then only partial.
TEST(Verdict, ACheckThatThrowsIsNamedAndTheRestOfTheDiagnosisStands) {
  const std::string died = std::string(NCCLSCAN_SOURCE_DIR) + "/corpus/cons-died-first-silent-rank2-4r";
  const std::string healthy = std::string(NCCLSCAN_SOURCE_DIR) + "/corpus/case-healthy-socket-single-node-4r";
  ScanOptions opts;
  InjectStepFaultForTesting("CONSENSUS-DIED-FIRST");
  Analysis a = Analyze(BuiltInRules(), {died}, opts);
  InjectStepFaultForTesting("");
  Analysis h = Analyze(BuiltInRules(), {healthy}, opts);
  ASSERT_EQ(a.diagnosis.internal_errors.size(), 1u);
  EXPECT_EQ(a.diagnosis.internal_errors[0], "CONSENSUS-DIED-FIRST: injected fault");
  ASSERT_GE(a.diagnosis.primary, 0);
  EXPECT_EQ(a.diagnosis.findings[a.diagnosis.primary].rule_id, "TORCH-WATCHDOG-TIMEOUT");
  const std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(json.find("\"internal_errors\":[\"CONSENSUS-DIED-FIRST: injected fault\"]"), std::string::npos);
  EXPECT_NE(RenderText(*a.state, a.diagnosis, {}).find("internal error in CONSENSUS-DIED-FIRST"), std::string::npos);
  EXPECT_TRUE(h.diagnosis.internal_errors.empty());
  EXPECT_EQ(std::string(StatusName(h.diagnosis.status)), "ok");
  InjectStepFaultForTesting("collective model");
  Analysis h2 = Analyze(BuiltInRules(), {healthy}, opts);
  InjectStepFaultForTesting("");
  EXPECT_EQ(std::string(StatusName(h2.diagnosis.status)), "partial");
  EXPECT_NE(h2.diagnosis.headline.find("could not run"), std::string::npos);
}

}  // namespace
}  // namespace ncclscan
