// Internal to engine/reports: the JSON writer and the helpers the report
// files (report.cc: text and markdown; report_tables.cc: the rank table and
// the rule list; report_json.cc: the JSON diagnosis) share.
//
// Thread-safety: a Json belongs to one thread; the functions are pure.
#ifndef NCCLSCAN_ENGINE_REPORTS_REPORT_INTERNAL_H_
#define NCCLSCAN_ENGINE_REPORTS_REPORT_INTERNAL_H_

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"
#include "parsers/text_util.h"

namespace ncclscan {

// Minimal streaming JSON writer: keys in the order written, text escaped with
// invalid UTF-8 replaced (log text is arbitrary bytes).
class Json {
 public:
  void BeginObject() {
    Sep();
    out_ += '{';
    first_ = true;
  }
  void EndObject() {
    out_ += '}';
    first_ = false;
  }
  void BeginArray() {
    Sep();
    out_ += '[';
    first_ = true;
  }
  void EndArray() {
    out_ += ']';
    first_ = false;
  }
  void Key(std::string_view k) {
    Sep();
    out_ += '"';
    AppendJsonEscaped(&out_, k);
    out_ += "\":";
    first_ = true;  // the value follows without a comma
  }
  void String(std::string_view s) {
    Sep();
    out_ += '"';
    AppendJsonEscaped(&out_, s);
    out_ += '"';
  }
  void Int(int64_t v) {
    Sep();
    out_ += std::to_string(v);
  }
  void UInt(uint64_t v) {
    Sep();
    out_ += std::to_string(v);
  }
  void Double(double v) {
    Sep();
    out_ += fmt::format("{:.2f}", v);
  }
  void Bool(bool b) {
    Sep();
    out_ += b ? "true" : "false";
  }
  void Null() {
    Sep();
    out_ += "null";
  }
  void KV(std::string_view k, std::string_view v) {
    Key(k);
    String(v);
  }
  void KVInt(std::string_view k, int64_t v) {
    Key(k);
    Int(v);
  }
  std::string& str() { return out_; }

 private:
  void Sep() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string out_;
  bool first_ = true;
};

std::string RanksOfSubjects(const JobState& st, const std::vector<int>& subjects);

// NCCL / PyTorch versions and the ranks that reported each.
std::map<std::string, std::vector<int>> VersionsOf(const JobState& st, Fact fact_id);

void WriteFactValue(Json* j, const FactSpec& spec, const FactValue& v);

// input.skipped and input.walk_errors (engine/io/source.h: SkippedInputs).
void WriteSkipped(Json* j, const SkippedInputs& sk);

// Whose line a piece of evidence is: the live subject (JobState::subjects)
// that printed it, -1 when unknown. Built once per report: the subject a line
// finding recorded, else the rank the line names itself by, else the one
// ranked process whose lines the file holds.
class EvidenceOwners {
 public:
  explicit EvidenceOwners(const JobState& st);
  int Of(const Evidence& e) const;
  // The rank and host of Of(e): -1 / "" when unknown; the file's path hints
  // (rank3.log, node7/) when no subject is known.
  int Rank(const Evidence& e) const;
  std::string Host(const Evidence& e) const;

 private:
  const JobState& st_;
  std::map<int, int> by_rank_;           // rank -> live subject
  std::map<int, int> only_one_in_file_;  // file -> its one ranked live subject (-1: several)
};

// Evidence as a JSON array: file and line as cited, text, and (schema 1.2)
// rank, host and time of the line, null where unknown.
void WriteEvidence(Json* j, const JobState& st, const EvidenceOwners& owners, const std::vector<Evidence>& ev);
// A time of the logs (seconds of the year) as the JSON writes it: ISO 8601
// when the logs name the year (Counters::Year), else "MM-DD HH:MM:SS.mmm";
// null when -1.
void WriteTime(Json* j, const JobState& st, double t);

std::string HumanBytes(uint64_t b);

// A field of a report at most kMaxFieldText bytes long, cut between characters.
std::string Bounded(std::string_view s);

std::string WithCommas(uint64_t v);

// Columns a line of (sanitized) text takes at a terminal: one per character.
size_t Columns(std::string_view s);
// Where a finding is: who, compactly ("ranks 0-11 on 3 hosts", WhoText) or
// in full (verbose); then its communicator, group, op and sequence.
std::string Where(const Finding& f, bool verbose);
// The report's line on what was read: files, bytes, lines by family, ranks,
// hosts, communicators, NCCL versions.
std::string InputLine(const JobState& st);
// The one line a healthy run gets: what was healthy.
std::string HealthLine(const JobState& st);
// What the state's bounds left out, a line each; none within them.
std::vector<std::string> LimitNotes(const JobState& st);
std::string InternalErrorNote(const std::string& e);

// `text` (one line, already made safe) laid out in lines of at most `width`
// columns: the first line continues at column `first_col`, the next ones
// start with `indent` spaces. Breaks at blanks; a word wider than a line is
// broken after its last ',', '/', ';' or ':' that fits, else between two
// characters. width 0: unchanged (not a terminal).
std::string WrapColumns(std::string_view text, size_t first_col, size_t indent, int width);
// `text` cut to the columns left on a row that starts at `first_col`, ending
// in "..." when cut; unchanged when width is 0.
std::string OneRow(std::string_view text, size_t first_col, int width);
// The column where text laid out by WrapColumns from `first_col` ends.
size_t EndColumn(const std::string& wrapped, size_t first_col);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORTS_REPORT_INTERNAL_H_
