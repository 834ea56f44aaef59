// expected.json, a corpus case's expectation: read (ParseExpectation),
// compared with a diagnosis (Compare), and rewritten from one for --update
// (WriteExpectation). The runner (corpus_runner.cc) calls these.
#include <fmt/format.h>
#include <simdjson.h>

#include <set>
#include <string>
#include <vector>

#include "engine/corpus/corpus_runner_internal.h"
#include "engine/reports/report.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

std::vector<std::string> Strings(simdjson::dom::element e) {
  std::vector<std::string> out;
  simdjson::dom::array arr;
  if (e.get_array().get(arr) == simdjson::SUCCESS) {
    for (auto x : arr) {
      std::string_view s;
      if (x.get_string().get(s) == simdjson::SUCCESS) out.emplace_back(s);
    }
  }
  return out;
}

// Whether `e` is a list of strings; `what` names it in the error otherwise
// (a string where a list belongs would read as an empty list: "hosts": "n7"
// expecting nobody).
bool IsStringList(simdjson::dom::element e, const std::string& path, const char* what, std::string* err) {
  simdjson::dom::array arr;
  bool ok = e.get_array().get(arr) == simdjson::SUCCESS;
  if (ok) {
    for (auto x : arr) ok &= x.is_string();
  }
  if (!ok) *err = fmt::format("{}: {} must be a list of strings", path, what);
  return ok;
}

}  // namespace

bool ParseExpectation(const std::string& path, Expectation* ex, std::string* err) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  auto loaded = simdjson::padded_string::load(path);
  if (loaded.error()) {
    *err = "cannot read " + path;
    return false;
  }
  if (parser.parse(loaded.value()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    *err = path + ": not a JSON object";
    return false;
  }
  static const std::set<std::string_view> kKeys = {"description",  "primary", "present",       "absent",
                                                   "max_severity", "status",  "known_failure", "summary"};
  for (auto kv : root.get_object()) {
    if (!kKeys.count(kv.key)) ex->unknown_keys.emplace_back(kv.key);
  }
  std::string_view s;
  if (root["description"].get_string().get(s) == simdjson::SUCCESS) ex->description = std::string(s);
  simdjson::dom::element p;
  if (root["primary"].get(p) == simdjson::SUCCESS) {
    ex->has_primary = true;
    if (p.is_null()) {
      ex->primary_null = true;
    } else if (p.get_string().get(s) == simdjson::SUCCESS) {
      ex->primary_rule = std::string(s);  // "primary": "RULE", the rule alone
    } else {
      if (p["rule"].get_string().get(s) == simdjson::SUCCESS) ex->primary_rule = std::string(s);
      if (p["category"].get_string().get(s) == simdjson::SUCCESS) ex->primary_category = std::string(s);
      if (p["ranks"].get_string().get(s) == simdjson::SUCCESS) {
        ex->primary_ranks = std::string(s);
        ex->primary_has_ranks = true;
      }
      simdjson::dom::element h;
      if (p["hosts"].get(h) == simdjson::SUCCESS) {
        if (!IsStringList(h, path, "primary.hosts", err)) return false;
        ex->primary_hosts = Strings(h);
        ex->primary_has_hosts = true;
      }
      if (p["suspect_hosts"].get(h) == simdjson::SUCCESS) {
        if (!IsStringList(h, path, "primary.suspect_hosts", err)) return false;
        ex->primary_suspect_hosts = Strings(h);
        ex->primary_has_suspect_hosts = true;
      }
    }
  }
  simdjson::dom::array arr;
  if (root["present"].get_array().get(arr) == simdjson::SUCCESS) {
    ex->has_present = true;
    for (auto x : arr) {
      Expectation::Present pr;
      if (x.get_string().get(s) == simdjson::SUCCESS) {
        pr.rule = std::string(s);
      } else {
        if (x["rule"].get_string().get(s) == simdjson::SUCCESS) pr.rule = std::string(s);
        if (x["ranks"].get_string().get(s) == simdjson::SUCCESS) {
          pr.ranks = std::string(s);
          pr.has_ranks = true;
        }
      }
      if (!pr.rule.empty()) ex->present.push_back(pr);
    }
  }
  simdjson::dom::element a;
  if (root["absent"].get(a) == simdjson::SUCCESS) {
    if (!IsStringList(a, path, "absent", err)) return false;
    ex->absent = Strings(a);
    ex->has_absent = true;
  }
  if (root["max_severity"].get_string().get(s) == simdjson::SUCCESS) ex->max_severity = std::string(s);
  if (root["status"].get_string().get(s) == simdjson::SUCCESS) ex->status = std::string(s);
  if (root["known_failure"].get_string().get(s) == simdjson::SUCCESS) ex->known_failure = std::string(s);
  simdjson::dom::element sum;
  if (root["summary"].get(sum) == simdjson::SUCCESS && sum.is_object()) {
    ex->has_summary = true;
    if (sum["ranks"].get_string().get(s) == simdjson::SUCCESS) {
      ex->sum_ranks = std::string(s);
      ex->sum_has_ranks = true;
    }
    simdjson::dom::element h;
    if (sum["hosts"].get(h) == simdjson::SUCCESS) {
      if (!IsStringList(h, path, "summary.hosts", err)) return false;
      ex->sum_hosts = Strings(h);
      ex->sum_has_hosts = true;
    }
    int64_t n;
    if (sum["communicators"].get_int64().get(n) == simdjson::SUCCESS) {
      ex->sum_comms = n;
      ex->sum_has_comms = true;
    }
    if (sum["nccl_versions"].get(h) == simdjson::SUCCESS) {
      ex->sum_versions = Strings(h);
      ex->sum_has_versions = true;
    }
  }
  return true;
}

std::string Describe(const Finding& f) {
  std::string where = CompactRanks(f.ranks);
  std::string hosts;
  for (const auto& h : f.hosts) hosts += (hosts.empty() ? "" : ",") + h;
  return fmt::format("{} [{}, {}]{}{}", f.rule_id, SeverityName(f.severity), RoleName(f.role),
                     where.empty() ? "" : " ranks " + where, hosts.empty() ? "" : " hosts " + hosts);
}

std::string JoinList(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
  return "[" + out + "]";
}

namespace {

// What a case's "summary" block describes, from a finished scan (sorted lists).
struct JobSummary {
  std::string ranks;
  std::vector<std::string> hosts;
  int64_t communicators = 0;
  std::vector<std::string> nccl_versions;
};

JobSummary SummaryOf(const JobState& st) {
  JobSummary sum;
  std::vector<int> ranks;
  std::set<std::string> versions;
  const int fact = st.rules().fact(Fact::kNcclVersion);
  for (int s : st.LiveSubjects()) {
    const Subject& sub = st.subjects()[s];
    if (sub.rank >= 0) ranks.push_back(sub.rank);
    if (const FactValue* fv = sub.Get(fact)) versions.insert(fv->value);
  }
  sum.ranks = CompactRanks(ranks);
  std::set<std::string> hosts = st.Hosts();
  sum.hosts.assign(hosts.begin(), hosts.end());
  sum.communicators = static_cast<int64_t>(st.comms().size());
  sum.nccl_versions.assign(versions.begin(), versions.end());
  return sum;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  AppendJsonEscaped(&out, s);
  return out + "\"";
}

std::string QuotedList(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + Quote(x);
  return "[" + out + "]";
}

}  // namespace

std::vector<std::string> Compare(const Expectation& ex, const Analysis& a) {
  std::vector<std::string> diffs;
  const Diagnosis& d = a.diagnosis;
  const Finding* primary = d.primary >= 0 ? &d.findings[d.primary] : nullptr;
  if (ex.has_primary) {
    if (ex.primary_null) {
      if (primary) diffs.push_back("primary: expected none, got " + Describe(*primary));
    } else if (!primary) {
      diffs.push_back("primary: expected " + ex.primary_rule + ", got none (no finding at warning or above)");
    } else {
      if (!ex.primary_rule.empty() && primary->rule_id != ex.primary_rule) {
        diffs.push_back("primary: expected rule " + ex.primary_rule + ", got " + Describe(*primary));
      }
      if (!ex.primary_category.empty() && CategoryName(primary->category) != ex.primary_category) {
        diffs.push_back("primary: expected category " + ex.primary_category + ", got " +
                        CategoryName(primary->category));
      }
      if (!ex.primary_has_ranks && !ex.primary_has_hosts) {
        diffs.push_back(
            "primary: the expectation does not say whom it names: add \"ranks\" (\"\" for none) or "
            "\"hosts\" (got ranks " +
            CompactRanks(primary->ranks) + ", hosts " + JoinList(primary->hosts) + ")");
      }
      if (ex.primary_has_ranks && CompactRanks(primary->ranks) != ex.primary_ranks) {
        diffs.push_back("primary: expected ranks " + ex.primary_ranks + ", got " + CompactRanks(primary->ranks));
      }
      if (ex.primary_has_hosts) {
        std::vector<std::string> want = ex.primary_hosts;
        std::sort(want.begin(), want.end());
        if (want != primary->hosts) {
          diffs.push_back("primary: expected hosts " + JoinList(want) + ", got " + JoinList(primary->hosts));
        }
      }
      if (ex.primary_has_suspect_hosts) {
        std::vector<std::string> want = ex.primary_suspect_hosts;
        std::sort(want.begin(), want.end());
        if (want != primary->suspect_hosts) {
          diffs.push_back("primary: expected suspect hosts " + JoinList(want) + ", got " +
                          JoinList(primary->suspect_hosts));
        }
      }
    }
  }
  for (const auto& p : ex.present) {
    bool found = false;
    for (const auto& f : d.findings) {
      if (f.rule_id == p.rule && (!p.has_ranks || CompactRanks(f.ranks) == p.ranks)) found = true;
    }
    if (!found) {
      diffs.push_back("present: missing " + p.rule + (p.has_ranks ? " with ranks " + p.ranks : ""));
    }
  }
  for (const auto& r : ex.absent) {
    for (const auto& f : d.findings) {
      if (f.rule_id == r) diffs.push_back("absent: found " + Describe(f));
    }
  }
  if (!ex.status.empty() && ex.status != StatusName(d.status)) {
    diffs.push_back("status: expected " + ex.status + ", got " + StatusName(d.status));
  }
  if (!ex.max_severity.empty()) {
    Severity max;
    if (!ParseSeverity(ex.max_severity, &max)) {
      diffs.push_back("max_severity: unknown severity '" + ex.max_severity + "'");
    } else {
      for (const auto& f : d.findings) {
        if (f.severity > max) diffs.push_back("max_severity " + ex.max_severity + ": found " + Describe(f));
      }
    }
  }
  if (ex.has_summary) {
    const JobSummary got = SummaryOf(*a.state);
    if (ex.sum_has_ranks && got.ranks != ex.sum_ranks) {
      diffs.push_back("summary: expected ranks " + ex.sum_ranks + ", got " + got.ranks);
    }
    if (ex.sum_has_hosts) {
      std::vector<std::string> want = ex.sum_hosts;
      std::sort(want.begin(), want.end());
      if (got.hosts != want)
        diffs.push_back("summary: expected hosts " + JoinList(want) + ", got " + JoinList(got.hosts));
    }
    if (ex.sum_has_comms && got.communicators != ex.sum_comms) {
      diffs.push_back(fmt::format("summary: expected {} communicators, got {}", ex.sum_comms, got.communicators));
    }
    if (ex.sum_has_versions) {
      std::vector<std::string> want = ex.sum_versions;
      std::sort(want.begin(), want.end());
      if (got.nccl_versions != want) {
        diffs.push_back("summary: expected NCCL versions " + JoinList(want) + ", got " + JoinList(got.nccl_versions));
      }
    }
  }
  return diffs;
}

// The current diagnosis as the case's new expectation, lossless: every key the
// old expectation had is kept (with today's value), rank and host qualifiers
// stay where the author put them, entries keep their order, and anything that
// no longer holds (a present rule gone, an absent rule that now fires) is
// reported in *notes rather than dropped silently. An update with nothing
// changed rewrites the file byte for byte.
std::string WriteExpectation(const Expectation& old, const Analysis& a, std::vector<std::string>* notes) {
  const Diagnosis& d = a.diagnosis;
  std::string out = "{\n";
  out += "  \"description\": " + Quote(old.description) + ",\n";
  // A new case's expected.json holds only a description: it takes the whole
  // diagnosis. An existing one keeps its keys and qualifiers.
  const bool new_case = !old.has_primary && !old.has_present && !old.has_absent;
  if (old.has_primary || new_case) {
    if (d.primary >= 0) {
      const Finding& p = d.findings[d.primary];
      // Only the qualifiers the author wrote (a case may pin the category alone).
      std::string fields;
      if (new_case || !old.primary_rule.empty() || old.primary_null) fields += "\"rule\": " + Quote(p.rule_id);
      if (new_case || !old.primary_category.empty()) {
        fields += std::string(fields.empty() ? "" : ", ") + "\"category\": " + Quote(CategoryName(p.category));
      }
      out += "  \"primary\": {" + fields;
      // Who is named is pinned (Compare requires ranks or hosts): the ranks,
      // "" when it names none, unless the author pinned the hosts alone.
      if (old.primary_has_ranks || new_case || !old.primary_has_hosts)
        out += ", \"ranks\": " + Quote(CompactRanks(p.ranks));
      if (old.primary_has_hosts || (new_case && !p.hosts.empty())) out += ", \"hosts\": " + QuotedList(p.hosts);
      if (old.primary_has_suspect_hosts) out += ", \"suspect_hosts\": " + QuotedList(p.suspect_hosts);
      out += "},\n";
      if (!new_case && !old.primary_rule.empty() && p.rule_id != old.primary_rule) {
        notes->push_back("primary changed from " + (old.primary_null ? "null" : old.primary_rule) + " to " + p.rule_id);
      }
    } else {
      out += "  \"primary\": null,\n";
      if (!new_case && !old.primary_null) notes->push_back("primary changed from " + old.primary_rule + " to null");
    }
  }
  // What Compare() counts as present: a finding of any severity; a new case
  // lists those at warning or above.
  std::set<std::string> firing, worth_listing;
  std::map<std::string, std::vector<std::string>> ranks_of;  // per rule: each finding's ranks
  for (const auto& f : d.findings) {
    firing.insert(f.rule_id);
    if (f.severity >= Severity::kWarning) worth_listing.insert(f.rule_id);
    ranks_of[f.rule_id].push_back(CompactRanks(f.ranks));
  }
  std::vector<std::string> items;
  for (const auto& pr : old.present) {
    if (!firing.count(pr.rule)) {
      notes->push_back("present: " + pr.rule + " no longer fires (removed)");
      continue;
    }
    if (pr.has_ranks) {
      // As Compare(): some finding of the rule has exactly these ranks.
      const auto& all = ranks_of[pr.rule];
      std::string r = std::find(all.begin(), all.end(), pr.ranks) != all.end() ? pr.ranks : all.front();
      if (r != pr.ranks) notes->push_back("present: " + pr.rule + " ranks " + pr.ranks + " -> " + r);
      items.push_back("{\"rule\": " + Quote(pr.rule) + ", \"ranks\": " + Quote(r) + "}");
    } else {
      items.push_back(Quote(pr.rule));
    }
  }
  if (new_case) {
    for (const auto& r : worth_listing) items.push_back(Quote(r));
  }
  std::string list;
  for (const auto& x : items) list += (list.empty() ? "" : ", ") + x;
  out += "  \"present\": [" + list + "],\n";
  std::vector<std::string> absent;
  for (const auto& p : old.absent) {
    if (firing.count(p))
      notes->push_back("absent: " + p + " now fires (removed from absent)");
    else
      absent.push_back(p);
  }
  out += "  \"absent\": " + QuotedList(absent);
  Severity worst = Severity::kInfo;
  for (const auto& f : d.findings) worst = std::max(worst, f.severity);
  if (!old.max_severity.empty()) {
    Severity max;
    std::string value = old.max_severity;
    if (!ParseSeverity(old.max_severity, &max) || worst > max) {
      value = SeverityName(worst);
      notes->push_back("max_severity changed from " + old.max_severity + " to " + value);
    }
    out += ",\n  \"max_severity\": " + Quote(value);
  } else if (d.primary < 0) {
    out += ",\n  \"max_severity\": " + Quote(SeverityName(worst));
  }
  if (!old.status.empty()) out += ",\n  \"status\": " + Quote(StatusName(d.status));
  if (!old.known_failure.empty()) out += ",\n  \"known_failure\": " + Quote(old.known_failure);
  if (old.has_summary) {
    const JobSummary sum = SummaryOf(*a.state);
    std::vector<std::string> parts;
    if (old.sum_has_ranks) parts.push_back("\"ranks\": " + Quote(sum.ranks));
    if (old.sum_has_hosts) parts.push_back("\"hosts\": " + QuotedList(sum.hosts));
    if (old.sum_has_comms) parts.push_back(fmt::format("\"communicators\": {}", sum.communicators));
    if (old.sum_has_versions) parts.push_back("\"nccl_versions\": " + QuotedList(sum.nccl_versions));
    std::string fields;
    for (const auto& x : parts) fields += (fields.empty() ? "" : ", ") + x;
    out += ",\n  \"summary\": {" + fields + "}";
  }
  out += "\n}\n";
  return out;
}

}  // namespace ncclscan
