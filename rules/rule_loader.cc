#include "rules/rule_loader.h"

#include <dirent.h>
#include <fcntl.h>
#include <re2/filtered_re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <tuple>

#include "parsers/line_parser.h"
#include "parsers/text_util.h"
#include "rules/engine_contract.h"
#include "rules/rule_loader_internal.h"
#include "rules/rule_reader.h"

namespace ncclscan {

RuleLoader::RuleLoader() : impl_(new Impl) {}
RuleLoader::~RuleLoader() = default;

void RuleLoader::AddEmbedded(bool examples) {
  impl_->embedded = true;
  std::vector<RuleReader::Parsed> docs(kNumEmbeddedRuleFiles);
  // A scan reads the trees the build parsed from the files' lean text (rules/rule_node.h).
  std::vector<size_t> to_parse;
  for (int i = 0; i < kNumEmbeddedRuleFiles; ++i) {
    const EmbeddedRuleTrees& t = kEmbeddedRuleTrees[i];
    if (examples || !DecodeRuleDocuments(std::string_view(t.bytes, t.size), &docs[i].docs)) {
      to_parse.push_back(static_cast<size_t>(i));
    } else {
      docs[i].ok = true;
    }
  }
  // The whole files (rules --check, the tests) and any the build could not
  // parse: yaml-cpp, ~1 us per byte, on two threads, biggest first (the two
  // threads end together); then read in order (diagnostics stay in file order).
  std::stable_sort(to_parse.begin(), to_parse.end(), [](size_t a, size_t b) {
    return std::strlen(kEmbeddedRuleFiles[a].text) > std::strlen(kEmbeddedRuleFiles[b].text);
  });
  OnTwoThreads(to_parse.size(), [&](size_t k) {
    const size_t i = to_parse[k];
    try {
      const char* text = kEmbeddedRuleFiles[i].text;
      docs[i] = examples ? RuleReader::Parse(kEmbeddedRuleFiles[i].name, text, nullptr)
                         : RuleReader::Parse(kEmbeddedRuleFiles[i].name, LeanRuleText(text), nullptr);
    } catch (const std::exception& e) {  // not a YAML error (out of memory): a load error
      docs[i].ok = false;
      docs[i].error_pos = SourcePos{kEmbeddedRuleFiles[i].name, 0, 0};
      docs[i].error = std::string("cannot parse: ") + e.what();
    }
  });
  // A table that does not decode is only slower: every pattern is analysed here.
  impl_->known_atoms.clear();
  if (!DecodePatternAtoms(std::string_view(kEmbeddedPatternAtoms.bytes, kEmbeddedPatternAtoms.size),
                          &impl_->known_atoms)) {
    impl_->known_atoms.clear();
  }
  impl_->examples_stripped = !examples;
  for (int i = 0; i < kNumEmbeddedRuleFiles; ++i) {
    sources_[kEmbeddedRuleFiles[i].name] = kEmbeddedRuleFiles[i].text;
    impl_->Read(kEmbeddedRuleFiles[i].name, docs[i]);
  }
  impl_->examples_stripped = false;
}

void RuleLoader::BeginLayer() { ++impl_->layer; }

void RuleLoader::RequireEngineFacts() { impl_->embedded = true; }

// Reported as "ncclscan: error: …" (no line: from the command line, not a file).
void RuleLoader::Disable(const std::string& id) { impl_->disabled.push_back({id, SourcePos{"ncclscan", 0, 0}}); }

void RuleLoader::AddSource(const std::string& name, const std::string& text) {
  sources_[name] = text;
  impl_->ReadFile(name, text);
}

namespace {

// "x.yaml" and "x.yml" (YAML's two extensions); not a bare ".yaml".
bool IsRuleFileName(const std::string& n) {
  auto ends = [&](const char* ext) {
    const size_t k = std::strlen(ext);
    return n.size() > k && n.compare(n.size() - k, k, ext) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

const char* FileTypeName(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Reads a rule file of at most `max_bytes`. Only regular files: a FIFO would
// block the start-up forever and /dev/zero never ends; O_NONBLOCK makes the
// open of a FIFO without a writer return at once, so that fstat can tell.
bool ReadRuleFile(const std::string& path, size_t max_bytes, std::string* text, std::string* code, std::string* error) {
  *code = "E-IO";
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot read rule file: " + std::string(strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = "cannot read rule file: " + std::string(strerror(errno));
    close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *code = "E-FILE-TYPE";
    *error = std::string("rule file is ") + FileTypeName(st.st_mode) + ", not a regular file";
    close(fd);
    return false;
  }
  text->clear();
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read rule file: " + std::string(strerror(errno));
      close(fd);
      return false;
    }
    if (n == 0) break;
    // A file that grows while it is read stops at the limit too.
    if (text->size() + static_cast<size_t>(n) > max_bytes) {
      *code = "E-FILE-TOO-BIG";
      *error = "rule file is larger than " + std::to_string(max_bytes >> 20) + " MiB";
      close(fd);
      return false;
    }
    text->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

}  // namespace

bool RuleLoader::AddDirectory(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    impl_->Error(SourcePos{dir, 0, 0}, "E-IO", "cannot read rule directory: " + std::string(strerror(errno)));
    return false;
  }
  std::vector<std::string> files;
  if (S_ISREG(st.st_mode)) {
    files.push_back(dir);
  } else if (!S_ISDIR(st.st_mode)) {  // --rules /dev/zero, a FIFO: neither a file to read nor a directory
    impl_->Error(SourcePos{dir, 0, 0}, "E-FILE-TYPE",
                 std::string("rule file is ") + FileTypeName(st.st_mode) + ", not a regular file");
    return false;
  } else {
    DIR* d = opendir(dir.c_str());
    if (!d) {
      impl_->Error(SourcePos{dir, 0, 0}, "E-IO", "cannot read rule directory: " + std::string(strerror(errno)));
      return false;
    }
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (IsRuleFileName(n)) files.push_back(dir + "/" + n);
    }
    closedir(d);
    std::sort(files.begin(), files.end());
  }
  const YamlLimits limits;
  for (const auto& f : files) {
    std::string text, code, error;
    if (!ReadRuleFile(f, limits.max_bytes, &text, &code, &error)) {
      impl_->Error(SourcePos{f, 0, 0}, code, error);
      continue;
    }
    AddSource(f, text);
  }
  return true;
}

// Pass 2 begins: the facts, later layers redefining earlier ones, and the
// ones the engine needs by name (rules/engine_contract.h).
void RuleLoader::ValidateFacts(RuleSet* rs) {
  Impl& im = *impl_;
  // Facts: later layers may redefine; same layer duplicates are errors.
  std::map<std::string, int> fact_layer;
  for (auto& fe : im.facts) {
    const std::string& n = fe.spec.name.value;
    auto it = fact_layer.find(n);
    if (it != fact_layer.end() && it->second == fe.layer) {
      im.Error(fe.spec.name.pos, "E-DUPLICATE-ID", "duplicate fact '" + n + "'");
      continue;
    }
    if (it != fact_layer.end()) {
      rs->facts_[rs->fact_index_[n]] = fe.spec;
    } else {
      rs->fact_index_[n] = static_cast<int>(rs->facts_.size());
      rs->facts_.push_back(fe.spec);
    }
    fact_layer[n] = fe.layer;
  }
  // The facts the engine reads or sets by name (rules/engine_contract.h): with the
  // built-in rules loaded each must be declared, and wherever declared, in the
  // shape the engine assumes.
  for (const EngineFact& ef : EngineFacts()) {
    const std::string what =
        std::string("the engine needs fact '") + ef.name + "' (" + EngineFactShape(ef) + ") for " + ef.used_for;
    int idx = rs->FindFact(ef.name);
    if (idx < 0) {
      if (im.embedded) {
        // Where the facts are declared (a rename there is the usual cause).
        const SourcePos at = rs->facts().empty() ? SourcePos{"ncclscan", 0, 0} : rs->facts().front().name.pos;
        im.Error(at, "E-ENGINE-FACT", what + ", and no rule file declares it",
                 "declare it under 'facts:' as rules/facts.yaml does");
      }
      continue;
    }
    const FactSpec& fs = rs->facts()[idx];
    std::string diff = EngineFactMismatch(ef, fs);
    if (!diff.empty()) {
      im.Error(fs.name.pos, "E-ENGINE-FACT", what + "; this declaration differs: " + diff,
               "declare it as rules/facts.yaml does, or name your fact differently");
      continue;
    }
    rs->engine_facts_[static_cast<size_t>(ef.id)] = idx;
  }
}

// Which definition of each id is in force: rules and correlations share one
// id space; a later layer overrides an earlier one (*overridden says where).
void RuleLoader::SelectDefinitions(std::vector<const LineRule*>* rules_out,
                                   std::vector<const CorrelationRule*>* corrs_out,
                                   std::map<std::string, SourcePos>* overridden_out) {
  Impl& im = *impl_;
  std::vector<const LineRule*>& rules = *rules_out;
  std::vector<const CorrelationRule*>& corrs = *corrs_out;
  std::map<std::string, SourcePos>& overridden = *overridden_out;
  // Rules and correlations share one id space.
  std::map<std::string, std::pair<int, SourcePos>> seen;  // id -> layer, pos
  std::map<std::string, size_t> rule_slot, corr_slot;
  auto check_id = [&](const Located<std::string>& id, int layer) -> int {
    if (!ValidId(id.value)) {
      im.Error(id.pos, "E-BAD-VALUE", "invalid id '" + id.value + "'",
               "ids match [A-Z][A-Z0-9-]*, at most 64 characters");
    }
    auto it = seen.find(id.value);
    if (it != seen.end() && it->second.first == layer) {
      const SourcePos& o = it->second.second;
      im.Error(id.pos, "E-DUPLICATE-ID", "duplicate rule id '" + id.value + "'",
               "first defined at " + o.file + ":" + std::to_string(o.line) + ":" + std::to_string(o.col));
      return -1;
    }
    int r = it == seen.end() ? 0 : 1;  // 1 = overrides an earlier layer
    if (r == 1) overridden[id.value] = id.pos;
    seen[id.value] = {layer, id.pos};
    return r;
  };
  for (auto& re : im.rules) {
    int r = check_id(re.rule.id, re.layer);
    if (r < 0) continue;
    if (r == 1 && rule_slot.count(re.rule.id.value)) {
      rules[rule_slot[re.rule.id.value]] = &re.rule;
    } else if (r == 1 && corr_slot.count(re.rule.id.value)) {
      corrs[corr_slot[re.rule.id.value]] = nullptr;
      rule_slot[re.rule.id.value] = rules.size();
      rules.push_back(&re.rule);
    } else {
      rule_slot[re.rule.id.value] = rules.size();
      rules.push_back(&re.rule);
    }
  }
  for (auto& ce : im.correlations) {
    int r = check_id(ce.rule.id, ce.layer);
    if (r < 0) continue;
    if (r == 1 && corr_slot.count(ce.rule.id.value)) {
      corrs[corr_slot[ce.rule.id.value]] = &ce.rule;
    } else if (r == 1 && rule_slot.count(ce.rule.id.value)) {
      rules[rule_slot[ce.rule.id.value]] = nullptr;
      corr_slot[ce.rule.id.value] = corrs.size();
      corrs.push_back(&ce.rule);
    } else {
      corr_slot[ce.rule.id.value] = corrs.size();
      corrs.push_back(&ce.rule);
    }
  }
  rules.erase(std::remove(rules.begin(), rules.end(), nullptr), rules.end());
  corrs.erase(std::remove(corrs.begin(), corrs.end(), nullptr), corrs.end());
}

// Rules turned off, and the record of what a later layer changed.
void RuleLoader::ApplyDisables(RuleSet* rs, const std::vector<const CorrelationRule*>& corrs,
                               const std::map<std::string, SourcePos>& overridden, const std::set<std::string>& all_ids,
                               std::set<std::string>* off_out) {
  Impl& im = *impl_;
  // Rules turned off: `enabled: false` on the definition in force, a file's
  // `disable:` list, --disable. They are compiled and checked like the others
  // (their examples run with every rule present) and set aside at the end.
  std::set<std::string>& off = *off_out;
  auto where = [](const SourcePos& p) {
    return p.line == 0 ? std::string("--disable") : p.file + ":" + std::to_string(p.line);
  };
  std::map<std::string, std::string> off_where;
  for (const auto& r : rs->rules_) {
    if (!r.spec.enabled && off.insert(r.spec.id.value).second) off_where[r.spec.id.value] = where(r.spec.id.pos);
  }
  for (const CorrelationRule* c : corrs) {
    if (!c->enabled && off.insert(c->id.value).second) off_where[c->id.value] = where(c->id.pos);
  }
  for (const auto& d : im.disabled) {
    if (all_ids.count(d.value)) {
      if (off.insert(d.value).second) off_where[d.value] = where(d.pos);
    } else {
      im.Error(d.pos, "E-UNKNOWN-RULE",
               std::string(d.pos.line == 0 ? "--disable" : "disable") + " names unknown rule '" + d.value + "'",
               "no rule or correlation has this id; see 'ncclscan rules --list'");
    }
  }
  for (const auto& [id, pos] : overridden) {
    rs->changes_.push_back({id, "overridden", pos.file + ":" + std::to_string(pos.line)});
  }
  for (const auto& [id, at] : off_where) rs->changes_.push_back({id, "disabled", at});
  std::sort(rs->changes_.begin(), rs->changes_.end(), [](const RuleChange& a, const RuleChange& b) {
    return std::tie(a.id, a.change) < std::tie(b.id, b.change);
  });
}

void RuleLoader::Validate(RuleSet* rs, std::set<std::string>* off_out) {
  // ---- pass 2: validate ----------------------------------------------------
  ValidateFacts(rs);
  std::vector<const LineRule*> rules;
  std::vector<const CorrelationRule*> corrs;
  std::map<std::string, SourcePos> overridden;  // id -> where the last redefinition is
  SelectDefinitions(&rules, &corrs, &overridden);
  const RE2::Options opts = RegexOptions();
  // Every pattern compiled once, here, for diagnostics and for matching.
  // A `fields` rule has no regex: "x" stands in (its captures are the fields).
  std::vector<std::shared_ptr<const RE2>> regexes(rules.size());
  OnTwoThreads(rules.size(), [&](size_t i) {
    regexes[i] = std::make_shared<const RE2>(rules[i]->fields.empty() ? rules[i]->pattern.value : "x", opts);
  });
  // The names `remember:` sets, before any rule is compiled: any rule may read them.
  for (const LineRule* r : rules) {
    for (const auto& kv : r->remember) rs->remembered_.push_back(kv.first.value);
  }
  std::sort(rs->remembered_.begin(), rs->remembered_.end());
  rs->remembered_.erase(std::unique(rs->remembered_.begin(), rs->remembered_.end()), rs->remembered_.end());
  for (size_t i = 0; i < rules.size(); ++i) CompileRule(rs, rules[i], regexes[i]);

  std::set<std::string> all_ids;
  for (const auto& r : rs->rules_) all_ids.insert(r.spec.id.value);
  for (const CorrelationRule* c : corrs) all_ids.insert(c->id.value);
  for (const auto& r : rs->rules_) CheckExplains(r.spec.finding, all_ids);
  ApplyDisables(rs, corrs, overridden, all_ids, off_out);
  for (const CorrelationRule* c : corrs) CompileCorrelation(rs, c, all_ids);
}

// Falco's passes: the files were read into typed structs (AddSource,
// AddDirectory, AddEmbedded); then validate -> compile the prefilter -> check
// the rules' own examples. Every problem of every pass is reported at once.
std::unique_ptr<RuleSet> RuleLoader::Build(std::vector<Diagnostic>* diags) {
  Impl& im = *impl_;
  auto set = std::make_unique<RuleSet>();
  std::set<std::string> off;
  Validate(set.get(), &off);
  if (im.diags.empty()) CompilePrefilter(set.get());
  if (check_examples_ && im.diags.empty()) CheckExamples(set.get());
  *diags = im.diags;
  if (!im.diags.empty()) return nullptr;
  if (!off.empty()) {
    std::vector<CompiledRule> on_rules;
    for (auto& r : set->rules_) (off.count(r.spec.id.value) ? set->disabled_rules_ : on_rules).push_back(std::move(r));
    set->rules_ = std::move(on_rules);
    std::vector<CompiledCorrelation> on_corrs;
    for (auto& c : set->correlations_) {
      (off.count(c.spec.id.value) ? set->disabled_correlations_ : on_corrs).push_back(std::move(c));
    }
    set->correlations_ = std::move(on_corrs);
    set->IndexRules();  // the prefilter without them: a disabled rule costs nothing per line
  }
  return set;
}

std::string RenderDiagnostic(const Diagnostic& d, const std::map<std::string, std::string>& sources) {
  std::string out = d.pos.file;
  if (d.pos.line > 0) {
    out += ":" + std::to_string(d.pos.line);
    if (d.pos.col > 0) out += ":" + std::to_string(d.pos.col);
  }
  out += ": error: " + d.message + " [" + d.code + "]\n";
  auto it = sources.find(d.pos.file);
  if (it != sources.end() && d.pos.line > 0) {
    std::istringstream in(it->second);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      if (++n == d.pos.line) break;
    }
    if (n == d.pos.line) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      // A long line (a generated file, an alias bomb on one line) is shown as a
      // window around the column, each cut end marked "...".
      constexpr int kWindow = 160;
      int from = 0;
      std::string shown = line;
      if (static_cast<int>(line.size()) > kWindow) {
        from = std::max(0, std::min(d.pos.col - 1 - kWindow / 2, static_cast<int>(line.size()) - kWindow));
        shown = (from > 0 ? "..." : "") + line.substr(from, kWindow) +
                (from + kWindow < static_cast<int>(line.size()) ? "..." : "");
      }
      out += "    " + shown + "\n";
      if (d.pos.col > 0) {
        std::string pad = from > 0 ? "   " : "";
        for (int i = from; i < d.pos.col - 1 && i < static_cast<int>(line.size()); ++i) {
          pad += line[i] == '\t' ? '\t' : ' ';
        }
        out += "    " + pad + "^\n";
      }
    }
  }
  if (!d.help.empty()) out += "help: " + d.help + "\n";
  return out;
}

std::unique_ptr<RuleSet> LoadRules(const std::vector<std::string>& user_dirs, std::string* errors, int* num_errors,
                                   const std::vector<std::string>& disable, bool examples) {
  RuleLoader loader;
  // User rule files' examples are checked against every rule, the built-in
  // ones' near misses included: then the built-in files are read whole.
  const bool check = examples || !user_dirs.empty();
  loader.set_check_examples(check);
  loader.AddEmbedded(check);
  for (const auto& d : user_dirs) {
    loader.BeginLayer();
    loader.AddDirectory(d);
  }
  for (const auto& id : disable) loader.Disable(id);
  std::vector<Diagnostic> diags;
  auto set = loader.Build(&diags);
  if (set) {
    // FNV-1a over the sorted file names and texts, eight bytes a step (a byte
    // a step cost 7% of the start-up: 1.6 MB through a multiply chain).
    uint64_t h = 1469598103934665603ull;
    for (const auto& kv : loader.sources()) {
      for (const std::string* s : {&kv.first, &kv.second}) {
        size_t i = 0;
        for (; i + 8 <= s->size(); i += 8) {
          uint64_t w;
          std::memcpy(&w, s->data() + i, 8);
          h ^= w;
          h *= 1099511628211ull;
        }
        for (; i < s->size(); ++i) {
          h ^= static_cast<unsigned char>((*s)[i]);
          h *= 1099511628211ull;
        }
        h ^= 0xff;
        h *= 1099511628211ull;
      }
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    set->set_content_hash(buf);
  }
  if (num_errors) *num_errors = static_cast<int>(diags.size());
  // The first kMaxRenderedDiagnostics, then a count: a generated file of
  // 10,000 broken rules gave 17 MB of diagnostics.
  for (size_t i = 0; i < diags.size() && i < kMaxRenderedDiagnostics; ++i) {
    *errors += RenderDiagnostic(diags[i], loader.sources());
  }
  if (diags.size() > kMaxRenderedDiagnostics) {
    std::set<std::string> files;
    for (const auto& d : diags) files.insert(d.pos.file);
    *errors += "... and " + std::to_string(diags.size() - kMaxRenderedDiagnostics) +
               " more problem(s): " + std::to_string(diags.size()) + " in " + std::to_string(files.size()) +
               " file(s); fix these first\n";
  }
  return set;
}

}  // namespace ncclscan
