// The redactor (engine/run/redact.h) line by line: what is replaced, what
// stays, and that one value always gets one pseudonym of its own form.
#include "engine/run/redact.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_util.h"

namespace ncclscan {
namespace {

Redactor Make() {
  Redactor r("test-key");
  r.AddHost("gpu-node-7");
  r.AddHost("ng30903.narval.example.org");
  return r;
}

TEST(Redact, HostsAddressesAndTheirFormsAreReplaced) {
  Redactor r = Make();
  const std::string line =
      "gpu-node-7:48213:48290 [3] NCCL INFO Bootstrap : Using ib0:10.1.2.7<0> gid fe80::a288:c2ff:fe6b:1234 "
      "mac 0c:42:a1:9b:22:10";
  const std::string out = r.Redact(line);
  EXPECT_EQ(out.find("gpu-node-7"), std::string::npos) << out;
  EXPECT_EQ(out.find("10.1.2.7"), std::string::npos) << out;
  EXPECT_EQ(out.find("a288:c2ff"), std::string::npos) << out;
  EXPECT_EQ(out.find("0c:42:a1"), std::string::npos) << out;
  // The shapes the parsers read stay: host:pid:tid, an address with its port, fe80::.
  EXPECT_NE(out.find(":48213:48290 [3] NCCL INFO Bootstrap : Using ib0:10."), std::string::npos) << out;
  EXPECT_NE(out.find("<0> gid fe80::"), std::string::npos) << out;
  // One value, one pseudonym; and the same again with the same key.
  EXPECT_EQ(r.Redact("gpu-node-7"), r.Redact("gpu-node-7"));
  Redactor again = Make();
  EXPECT_EQ(again.Redact(line), out);
  Redactor other("another-key");
  other.AddHost("gpu-node-7");
  EXPECT_NE(other.Redact("gpu-node-7"), r.Redact("gpu-node-7"));
}

TEST(Redact, ANicSuffixAndTheDomainFollowTheirHost) {
  Redactor r = Make();
  const std::string out = r.Redact("Connection closed by remote peer ng30903-ib.narval.example.org<51159>");
  const std::string host = r.Redact("ng30903");
  EXPECT_NE(out.find(host + "-ib."), std::string::npos) << out;
  EXPECT_EQ(out.find("narval"), std::string::npos) << out;
  EXPECT_NE(out.find("<51159>"), std::string::npos) << out;
  // A file name keeps what it says it holds.
  EXPECT_EQ(r.RedactPath("gpu-node-7.dmesg.log"), r.Redact("gpu-node-7") + ".dmesg.log");
  EXPECT_EQ(r.RedactPath("nccl.gpu-node-7.48213"), "nccl." + r.Redact("gpu-node-7") + ".48213");
  // So does a host-named file that grep -H cites before a line: ".log" is no domain.
  const std::string grep = r.Redact("gpu-node-7.log:gpu-node-7:123:456 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB");
  EXPECT_EQ(grep.rfind(r.Redact("gpu-node-7") + ".log:", 0), 0u) << grep;
}

// A pod of a Job is named after it ("trainer-workers-2-0-x7k2p" of Job
// "trainer-workers-2"): the longest learned host hides, the pod's suffix stays,
// so a peer's address still reads as that host's alias after redaction.
TEST(Redact, APodNamedAfterItsJobFollowsTheJob) {
  Redactor r("test-key");
  r.AddHost("trainer-workers-2");
  r.AddHost("trainer");
  const std::string out =
      r.Redact("socketProgress: Connection closed by remote peer trainer-workers-2-0-x7k2p.trainer<57622>");
  EXPECT_EQ(out.find("trainer-workers"), std::string::npos) << out;
  EXPECT_NE(out.find(r.Redact("trainer-workers-2") + "-0-x7k2p"), std::string::npos) << out;
}

TEST(Redact, UsersJobsAndWhatMustStay) {
  Redactor r = Make();
  r.Learn("zeyer@cn-234 ~ % nvidia-smi\nslurmstepd: error: *** STEP 9411285.0 ON cn-234 CANCELLED ***\n");
  const std::string out =
      r.Redact("File \"/home/zeyer/setups/train.py\", line 12 | slurm-9411285.out | zeyer@cn-234:~$ | on cn-234");
  for (const char* gone : {"zeyer", "9411285", "cn-234"}) EXPECT_EQ(out.find(gone), std::string::npos) << gone << out;
  // What a diagnosis reads stays: versions, times, PCI addresses, C++ scopes, loopback.
  const std::string keep =
      "NCCL version 2.21.5+cuda12.4 at 10:15:32.123 busId 1b000 PCI:0000:3b:00 c10d::ProcessGroupNCCL "
      "127.0.0.1 step 4242 root@";
  EXPECT_EQ(r.Redact(keep), keep);
  // A binary member keeps every length it encodes.
  r.set_same_length(true);
  const std::string pickle("\x80\x02X\x0a\x00\x00\x00gpu-node-7q\x01", 19);
  const std::string redacted = r.Redact(pickle);
  EXPECT_EQ(redacted.size(), pickle.size());
  EXPECT_EQ(redacted.find("gpu-node-7"), std::string::npos);
}

// "[logger@rank0]" names a rank, not a host: learned as a host, the rank
// prefixes "[rank0]:" the scan reads would be the only place it survives
// (corpus nemo-resiliency-demo, a redact_property leak).
TEST(Redact, ARankLabelAfterAtIsNoHost) {
  Redactor r = Make();
  r.Learn("[NeMo I 2025-02-21 10:00:00 nemo_logging:393] [launcher@rank0] Local artifacts dir: /tmp/x\n");
  const std::string line = "[default0]:[rank0]: Exception: Simulating a crash at step 17!";
  EXPECT_EQ(r.Redact(line), line);
  // Nor is it replaced as a prompt's host where it stands after '@'.
  EXPECT_NE(r.Redact("[launcher@rank0] Local artifacts dir: /tmp/x").find("@rank0]"), std::string::npos);
  r.Learn("[launcher@gpu-node-7] up\n");
  EXPECT_EQ(r.Redact("on gpu-node-7").find("gpu-node-7"), std::string::npos);
}

// Learn searches its words block by block (16 KiB, overlapping): a word that
// straddles a block's end is found, at every offset around it, and a text
// without any of them teaches nothing.
TEST(Redact, LearnFindsAWordAcrossItsSearchBlocks) {
  for (size_t at = (16 << 10) - 8; at <= (16 << 10) + 1; ++at) {
    Redactor r("test-key");
    std::string text(at, 'x');
    text += "/Users/zeyer/train.py\n";
    text.append(40000, 'y');
    r.Learn(text);
    EXPECT_EQ(r.Redact("ls /data/zeyer/x").find("zeyer"), std::string::npos) << "word at " << at;
  }
  Redactor none("test-key");
  none.Learn(std::string(50000, 'x') + " zeyer " + std::string(50000, 'y'));
  EXPECT_NE(none.Redact("ls /data/zeyer/x").find("zeyer"), std::string::npos);
}

// A container id is 64 hex digits whatever its first one is: one starting with
// a digit was taken for a number (a job id) and kept.
TEST(Redact, ContainerIdsStartingWithADigitAreReplaced) {
  Redactor r = Make();
  const std::string digit = "31220f55a46a945720cae03241b0a6faf40c473a7d3a464342f734622cdbbd79";
  const std::string letter = "f793843b19dda2930e6292324081e3dc09bd59442b903c62892ba0c2ad6d8341";
  for (const std::string& id : {digit, letter}) {
    const std::string out = r.Redact("cpuset=/docker/" + id + " container " + id + " is up");
    EXPECT_EQ(out.find(id), std::string::npos) << out;
    EXPECT_EQ(out.size(), std::string("cpuset=/docker/ container  is up").size() + 2 * 64) << out;
  }
  // Numbers and hex words of other lengths stay: counts, pointers, opCounts.
  const std::string keep = "opCount 3f2 sendbuff 0x7f2a4c000000 count 262144 datatype 7 [nranks=64] 1234567";
  EXPECT_EQ(r.Redact(keep), keep);
}

}  // namespace
}  // namespace ncclscan

namespace ncclscan {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A symbolic link planted in the output directory, at a copy's name or at a
// directory above one, is never written through: the file it points to stays
// as it was, the copy is reported as an error, the other inputs are written.
TEST(RedactInputs, NeverWritesThroughALinkInTheOutputDirectory) {
  TempDir in, out, elsewhere;
  const std::string line = "gpu-node-7:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n";
  const std::string a = in.Write("a.log", line), b = in.Write("b.log", line), c = in.Write("sub/c.log", line);
  const std::string victim = elsewhere.Write("victim.txt", "untouched\n");
  // A copy's path under the output directory is its input's path (here absolute).
  const std::string mirror = out.path() + in.path();
  ASSERT_EQ(std::system(("mkdir -p '" + mirror + "'").c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (mirror + "/a.log").c_str()), 0);
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (mirror + "/sub").c_str()), 0);
  RedactOptions opts;
  opts.key = "k";
  opts.out_dir = out.path();
  opts.scan.jobs = 1;
  const RedactResult res = RedactInputs(BuiltInRules(), {a, b, c}, opts);
  EXPECT_EQ(Slurp(victim), "untouched\n");
  struct stat st;
  EXPECT_NE(::stat((elsewhere.path() + "/c.log").c_str(), &st), 0) << "written through the linked directory";
  ASSERT_EQ(res.errors.size(), 2u);
  EXPECT_NE(res.errors[0].find("symbolic link"), std::string::npos) << res.errors[0];
  EXPECT_NE(res.errors[1].find("not a directory"), std::string::npos) << res.errors[1];
  const std::string copy = Slurp(mirror + "/b.log");
  EXPECT_NE(copy.find("NCCL INFO Bootstrap"), std::string::npos);
  EXPECT_EQ(copy.find("gpu-node-7"), std::string::npos);
}

}  // namespace
}  // namespace ncclscan
