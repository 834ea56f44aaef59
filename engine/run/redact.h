// ncclscan redact (issue 26): a copy of logs that can be shared. Host names,
// IPv4 and IPv6 addresses (IB GIDs included), MAC addresses, user names in
// home paths and prompts, container ids and Slurm job ids are replaced by
// pseudonyms; everything a diagnosis reads stays as it was.
//
// Pseudonyms are keyed hashes (SHA-256 of the key and the value): one value
// always gets one pseudonym within a run, and with the same --key across runs.
// They keep each value's form, so the parsers read them as they read the
// originals: a host name becomes "host-1a2b3c", an address another address of
// the same kind (loopback and link-local stay so), a job id a number of as
// many digits. Host names come from a scan of the same inputs (every host the
// engine placed a process on, every wrapper's host, every address owner);
// the rest from their shapes.
//
// Thread-safety: one thread at a time (Redact memoizes pseudonyms).
#ifndef NCCLSCAN_ENGINE_RUN_REDACT_H_
#define NCCLSCAN_ENGINE_RUN_REDACT_H_

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/scan/scanner.h"
#include "engine/state/job_state.h"
#include "rules/rule_set.h"

namespace ncclscan {

class Redactor {
 public:
  // `key` empty: a random key of this process (pseudonyms stable within the run only).
  explicit Redactor(std::string key);

  // A host name to hide wherever it stands as a word ("localhost" is kept);
  // the name up to its first '.' (the domain is hidden where it follows it).
  void AddHost(std::string_view host);
  // Every host the scan placed a process, a stream or an address on.
  void AddHostsOf(const JobState& state);
  // Learns from raw text what only some lines say outright: a prompt's
  // user@host, a home directory's user, a Slurm job's id ("StepId=4242.0",
  // "STEP 4242.0", "slurm-4242.out"). The values are then hidden wherever they
  // stand: hosts as words, users as path components and before '@', job ids
  // of five digits or more as numbers of their own. Call before Redact.
  void Learn(std::string_view text);
  // The names another redactor learned, added to these.
  void Absorb(const Redactor& o);
  // A redactor of the same key and names, with a memo of its own (one per thread).
  Redactor Fork() const;

  // Appends `in`, every redactable value replaced, to *out.
  void Redact(std::string_view in, std::string* out);
  std::string Redact(std::string_view in) {
    std::string out;
    Redact(in, &out);
    return out;
  }
  // A file name: as Redact, but what follows a host name stays ("node-7.dmesg.log"
  // keeps ".dmesg.log", which says what the file holds).
  std::string RedactPath(std::string_view name) {
    in_path_ = true;
    std::string out = Redact(name);
    in_path_ = false;
    return out;
  }
  // Binary content (a pickle): each pseudonym is cut or padded to the length of
  // its value, so the lengths the format encodes stay right.
  void set_same_length(bool on) { same_length_ = on; }
  // Original value -> pseudonym, of every value replaced so far; and what
  // kind of value each is ("host", "ipv4", "ipv6", "mac", "user", "container", "job", "domain").
  const std::map<std::string, std::string, std::less<>>& mapping() const { return mapping_; }
  const std::map<std::string, std::string>& kinds() const { return kinds_; }
  uint64_t replaced() const { return replaced_; }

 private:
  // Valid until the next call.
  const std::string& Pseudonym(int kind, std::string_view value);
  size_t HostPrefix(std::string_view name) const;
  std::string Digest(int kind, std::string_view value) const;

  std::string key_;
  std::set<std::string, std::less<>> hosts_, users_, jobs_;
  // The first characters of hosts_ and users_: a word starting otherwise is none of them.
  std::array<bool, 256> first_char_{};
  size_t first_char_count_ = ~size_t{0};
  std::map<std::string, std::string, std::less<>> mapping_;
  // The last value Pseudonym was asked for and its pseudonym: a file's lines
  // repeat one host name (a copy carries them with the mapping they came from).
  std::string last_value_, last_pseudonym_;
  std::map<std::string, std::string> kinds_;
  uint64_t replaced_ = 0;
  bool in_path_ = false;
  bool same_length_ = false;
  bool in_binary_pass_ = false;
};

struct RedactOptions {
  std::string key;      // see Redactor
  std::string out_dir;  // the copies go here, at their paths relative to the input named
  ScanOptions scan;     // the scan that learns the host names (threads, globs)
};

struct RedactResult {
  std::vector<std::string> written;  // the files written, in input order
  std::vector<std::string> errors;   // unreadable inputs, unwritable outputs
  uint64_t bytes = 0;                // bytes read
  uint64_t replaced = 0;             // values replaced
  std::map<std::string, std::string, std::less<>> mapping;
  std::map<std::string, std::string> kinds;  // Redactor::kinds
};

// Scans `paths` (files and directories: not standard input, which cannot be
// read twice) to learn their host names, then writes each file (each archive
// member, each decompressed file) redacted under opts.out_dir.
RedactResult RedactInputs(const RuleSet& rules, const std::vector<std::string>& paths, const RedactOptions& opts);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_RUN_REDACT_H_
