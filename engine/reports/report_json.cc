// RenderJson (engine/reports/report.h): the versioned JSON diagnosis, one
// function per section in the order they are written.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "engine/reports/report.h"
#include "engine/reports/report_internal.h"

namespace ncclscan {

namespace {

// The sections of RenderJson, in the order they are written.

void JsonHeader(Json* j, const JobState& st, const Diagnosis& d) {
  j->BeginObject();
  j->KV("schema", kSchemaVersion);
  j->KV("schema_version", kSchemaMinorVersion);
  j->Key("tool");
  j->BeginObject();
  j->KV("name", "ncclscan");
  j->KV("version", ToolVersion());
  j->EndObject();
  j->Key("ruleset");
  j->BeginObject();
  j->KVInt("rules", static_cast<int64_t>(st.rules().rules().size() + st.rules().correlations().size()));
  j->KV("hash", st.rules().content_hash());
  if (!st.rules().changes().empty()) {
    j->Key("changes");
    j->BeginArray();
    for (const RuleChange& rc : st.rules().changes()) {
      j->BeginObject();
      j->KV("id", rc.id);
      j->KV("change", rc.change);
      j->KV("where", rc.where);
      j->EndObject();
    }
    j->EndArray();
  }
  j->EndObject();
  j->Key("job_id");
  if (d.job_id.empty())
    j->Null();
  else
    j->String(d.job_id);
}

// input's files, sizes, line counts by family and by fate, and the caps met.
void JsonInputCounts(Json* j, const JobState& st) {
  const Counters& c = st.counters();
  j->Key("files");
  j->BeginArray();
  int unreadable = 0;
  for (const auto& f : st.files()) {
    j->BeginObject();
    j->KV("path", f.path);
    j->Key("bytes");
    j->UInt(f.bytes);
    j->Key("lines");
    j->UInt(f.lines);
    if (!f.error.empty()) {
      j->KV("error", f.error);
      ++unreadable;
    }
    j->EndObject();
  }
  j->EndArray();
  j->Key("bytes");
  j->UInt(c.bytes);
  j->Key("lines");
  j->UInt(c.lines);
  j->Key("lines_by_family");
  j->BeginObject();
  for (int i = 0; i < kNumFamilies; ++i) {
    j->Key(FamilyName(static_cast<Family>(i)));
    j->UInt(c.family_lines[i]);
  }
  j->EndObject();
  j->Key("lines_recognised");
  j->UInt(c.recognised_lines());
  j->Key("lines_matched");
  j->UInt(c.matched_lines);
  j->Key("lines_unparsed");
  j->BeginObject();
  j->Key("binary");
  j->UInt(c.binary_lines);
  j->Key("with_nul");
  j->UInt(c.nul_lines);
  j->Key("overlong_cut");
  j->UInt(c.overlong_lines);
  j->Key("glued_split");
  j->UInt(c.glued_lines);
  j->Key("bad_number");
  j->UInt(c.bad_numbers);
  j->EndObject();
  j->KVInt("unreadable_files", unreadable);
  j->Key("limits");
  j->BeginObject();
  for (const auto& [name, cap, over] :
       {std::tuple<const char*, size_t, uint64_t>{"processes_and_ranks", kMaxSubjects, c.over_subject_cap},
        {"communicators", kMaxComms, c.over_comm_cap},
        {"keys_per_fact", kMaxKeysPerFact, c.over_key_cap},
        {"flight_recorder_entries", kMaxFrEntriesHeld, c.over_fr_entry_cap}}) {
    j->Key(name);
    j->BeginObject();
    j->KVInt("cap", static_cast<int64_t>(cap));
    j->Key("over");
    j->UInt(over);
    j->EndObject();
  }
  j->EndObject();
}

// input's job: ranks, hosts, communicators, library versions.
void JsonInputJob(Json* j, const JobState& st) {
  std::vector<int> live = st.LiveSubjects();
  std::vector<int> ranks;
  for (int s : live) {
    if (st.subjects()[s].rank >= 0) ranks.push_back(st.subjects()[s].rank);
  }
  j->Key("ranks");
  j->BeginObject();
  j->KVInt("count", static_cast<int64_t>(ranks.size()));
  j->KV("list", CompactRanks(ranks));
  j->EndObject();
  j->Key("hosts");
  j->BeginArray();
  for (const auto& h : st.Hosts()) j->String(h);
  j->EndArray();
  j->Key("communicators");
  j->BeginArray();
  for (const auto& kv : st.comms()) {
    const CommInfo& ci = kv.second;
    j->BeginObject();
    j->KV("id", ci.id);
    j->KVInt("nranks", ci.nranks);
    std::set<int> seen = ci.RanksSeen();
    j->KV("ranks_seen", CompactRanks(std::vector<int>(seen.begin(), seen.end())));
    j->KV("ranks_init_complete", CompactRanks(std::vector<int>(ci.ranks_completed.begin(), ci.ranks_completed.end())));
    std::set<std::string> hosts;
    for (int s : ci.subjects) {
      if (!st.subjects()[s].host.empty()) hosts.insert(st.subjects()[s].host);
    }
    j->Key("hosts");
    j->BeginArray();
    for (const auto& h : hosts) j->String(h);
    j->EndArray();
    j->EndObject();
  }
  j->EndArray();
  j->Key("versions");
  j->BeginObject();
  for (const char* name : {"nccl", "pytorch"}) {
    j->Key(name);
    j->BeginArray();
    for (const auto& kv : VersionsOf(st, std::string(name) == "nccl" ? Fact::kNcclVersion : Fact::kTorchVersion)) {
      j->BeginObject();
      j->KV("version", kv.first);
      j->KV("ranks", RanksOfSubjects(st, kv.second));
      j->EndObject();
    }
    j->EndArray();
  }
  j->EndObject();
}

void JsonInput(Json* j, const JobState& st) {
  j->Key("input");
  j->BeginObject();
  JsonInputCounts(j, st);
  JsonInputJob(j, st);
  j->Key("identity_conflicts");
  j->BeginArray();
  for (const auto& s : st.identity_conflicts()) j->String(s);
  j->EndArray();
  WriteSkipped(j, st.skipped());
  j->EndObject();  // input
}

void JsonSubjects(Json* j, const JobState& st) {
  const std::vector<int> live = st.LiveSubjects();
  // Per-subject facts (ranks first).
  j->Key("subjects");
  j->BeginArray();
  const auto& facts = st.rules().facts();
  for (int si : live) {
    const Subject& s = st.subjects()[si];
    j->BeginObject();
    if (s.rank >= 0)
      j->KVInt("rank", s.rank);
    else
      j->Key("rank"), j->Null();
    j->KV("label", s.label);
    j->KV("host", s.host);
    if (s.pid >= 0) j->KVInt("pid", s.pid);
    j->Key("facts");
    j->BeginObject();
    for (size_t f = 0; f < facts.size(); ++f) {
      if (facts[f].keyed) {
        if (s.keyed[f].empty()) continue;
        j->Key(facts[f].name.value);
        j->BeginObject();
        for (const auto& kv : s.keyed[f]) {
          j->Key(kv.first);
          WriteFactValue(j, facts[f], kv.second);
        }
        j->EndObject();
      } else if (const FactValue* v = s.Get(static_cast<int>(f))) {
        j->Key(facts[f].name.value);
        WriteFactValue(j, facts[f], *v);
      }
    }
    j->EndObject();
    j->EndObject();
  }
  j->EndArray();
}

void JsonVerdict(Json* j, const Diagnosis& d) {
  j->Key("verdict");
  j->BeginObject();
  j->KV("status", StatusName(d.status));
  j->KV("headline", Bounded(d.headline));
  if (d.primary >= 0) {
    j->KV("primary", d.findings[d.primary].rule_id);
    j->KV("primary_fingerprint", d.findings[d.primary].fingerprint);
  } else {
    j->Key("primary");
    j->Null();
    j->Key("primary_fingerprint");
    j->Null();
  }
  j->EndObject();
}

void WriteRankIds(Json* j, const std::vector<int>& ranks) {
  j->Key("rank_ids");
  j->BeginArray();
  for (int r : ranks) j->Int(r);
  j->EndArray();
}

// The fingerprints of the findings of each rule (a rule's findings can be several).
std::map<std::string, std::vector<std::string>> FingerprintsByRule(const Diagnosis& d) {
  std::map<std::string, std::vector<std::string>> out;
  for (const Finding& f : d.findings) {
    auto& v = out[f.rule_id];
    if (std::find(v.begin(), v.end(), f.fingerprint) == v.end()) v.push_back(f.fingerprint);
  }
  return out;
}

void WriteStrings(Json* j, const char* key, const std::vector<std::string>& v) {
  j->Key(key);
  j->BeginArray();
  for (const auto& s : v) j->String(s);
  j->EndArray();
}

void JsonFindings(Json* j, const JobState& st, const Diagnosis& d) {
  const EvidenceOwners owners(st);
  // explained_by names rules; explained_by_findings / explains link findings
  // by fingerprint, the key a bot files tickets under.
  const auto by_rule = FingerprintsByRule(d);
  std::map<std::string, std::vector<std::string>> explains;  // fingerprint -> fingerprints it explains
  for (const Finding& f : d.findings) {
    for (const auto& root : f.explained_by) {
      auto it = by_rule.find(root);
      if (it == by_rule.end()) continue;
      for (const auto& fp : it->second) {
        auto& v = explains[fp];
        if (std::find(v.begin(), v.end(), f.fingerprint) == v.end()) v.push_back(f.fingerprint);
      }
    }
  }
  j->Key("findings");
  j->BeginArray();
  size_t findings_omitted = 0;  // past kMaxJsonFindings (ranked: the least important)
  for (size_t fi = 0; fi < d.findings.size(); ++fi) {
    const Finding& f = d.findings[fi];
    if (fi >= kMaxJsonFindings && static_cast<int>(fi) != d.primary) {
      ++findings_omitted;
      continue;
    }
    j->BeginObject();
    j->KV("rule", f.rule_id);
    j->KV("kind", FindingKindName(f));
    j->KV("category", CategoryName(f.category));
    j->KV("severity", SeverityName(f.severity));
    j->Key("confidence");
    j->Double(f.confidence);
    j->KV("role", RoleName(f.role));
    j->KV("title", Bounded(f.title));
    j->KV("explanation", Bounded(f.explanation));
    j->KV("ranks", CompactRanks(f.ranks));
    WriteRankIds(j, f.ranks);
    j->Key("hosts");
    j->BeginArray();
    for (const auto& h : f.hosts) j->String(h);
    j->EndArray();
    j->Key("other_subjects");
    j->BeginArray();
    for (const auto& o : f.others) j->String(o);
    j->EndArray();
    for (auto [k, v] : {std::pair<const char*, const std::string*>{"communicator", &f.communicator},
                        {"process_group", &f.process_group},
                        {"op_type", &f.op_type},
                        {"sequence", &f.sequence}}) {
      j->Key(k);
      if (v->empty())
        j->Null();
      else
        j->String(*v);
    }
    j->KVInt("count", f.count);
    j->Key("evidence");
    WriteEvidence(j, st, owners, f.evidence);
    j->KV("remediation", Bounded(f.remediation));
    j->Key("references");
    j->BeginArray();
    for (const auto& r : f.references) j->String(r);
    j->EndArray();
    j->Key("known_issues");
    j->BeginArray();
    for (const KnownIssueNote& n : f.known_issues) {
      const KnownIssue& k = *n.issue;
      j->BeginObject();
      j->KV("url", k.url.value);
      j->KV("title", Bounded(k.title));
      j->KV("component", k.component);
      j->Key("affected");
      if (k.affected.value.empty())
        j->Null();
      else
        j->String(k.affected_range.text());
      j->Key("fixed_in");
      if (k.fixed_in.value.empty())
        j->Null();
      else
        j->String(k.fixed_in.value);
      j->Key("affected_only");
      j->Bool(k.affected_only);
      j->KV("status", n.status);
      j->Key("versions");
      j->BeginArray();
      for (const auto& v : n.versions) j->String(v);
      j->EndArray();
      j->EndObject();
    }
    j->EndArray();
    WriteStrings(j, "explained_by", f.explained_by);
    std::vector<std::string> explained_by_findings;
    for (const auto& root : f.explained_by) {
      auto it = by_rule.find(root);
      if (it != by_rule.end()) {
        explained_by_findings.insert(explained_by_findings.end(), it->second.begin(), it->second.end());
      }
    }
    WriteStrings(j, "explained_by_findings", explained_by_findings);
    auto ex = explains.find(f.fingerprint);
    WriteStrings(j, "explains", ex == explains.end() ? std::vector<std::string>() : ex->second);
    j->Key("nccl_result");
    if (f.result.empty())
      j->Null();
    else
      j->String(f.result);
    j->Key("primary");
    j->Bool(f.primary);
    j->KV("owner", OwnerName(f.owner));
    for (auto [name, who_ranks, who_hosts] :
         {std::tuple<const char*, const std::vector<int>*, const std::vector<std::string>*>{
              "suspects", &f.suspect_ranks, &f.suspect_hosts},
          {"reporters", &f.ranks, &f.hosts}}) {
      j->Key(name);
      j->BeginObject();
      j->KV("ranks", CompactRanks(*who_ranks));
      WriteRankIds(j, *who_ranks);
      j->Key("hosts");
      j->BeginArray();
      for (const auto& h : *who_hosts) j->String(h);
      j->EndArray();
      j->EndObject();
    }
    for (auto [name, seen] : {std::pair<const char*, const Seen*>{"first_seen", &f.first}, {"last_seen", &f.last}}) {
      j->Key(name);
      WriteTime(j, st, seen->time);
    }
    j->KV("instance", f.instance);
    j->KV("fingerprint", f.fingerprint);
    j->EndObject();
  }
  j->EndArray();
  j->KVInt("findings_omitted", static_cast<int64_t>(findings_omitted));
}

}  // namespace

std::string RenderJson(const JobState& st, const Diagnosis& d) {
  Json j;
  JsonHeader(&j, st, d);  // opens the object
  JsonInput(&j, st);
  JsonSubjects(&j, st);
  JsonVerdict(&j, d);
  JsonFindings(&j, st, d);
  j.Key("internal_errors");
  j.BeginArray();
  for (const auto& e : d.internal_errors) j.String(e);
  j.EndArray();
  j.EndObject();
  j.str() += '\n';
  return j.str();
}

}  // namespace ncclscan
