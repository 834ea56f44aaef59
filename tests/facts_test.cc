// The one merge algebra of facts (engine/state/facts.h): whatever path puts
// values together — line by line, a state absorbed after another, subjects
// merged in any order — the value, evidence and count come out the same.
#include "engine/state/facts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace ncclscan {
namespace {

FactValue At(std::string v, int64_t line) {
  FactValue f;
  f.value = std::move(v);
  f.values = {f.value};
  f.count = 1;
  f.evidence.file = 0;
  f.evidence.line = line;
  f.evidence.text = "line " + std::to_string(line);
  f.seen = Seen{-1, 0, line};
  return f;
}

FactSpec Spec(MergeMode m) {
  FactSpec s;
  s.merge = m;
  return s;
}

// Folds values[from, to) line by line, in input order.
FactValue Fold(const FactSpec& spec, const std::vector<FactValue>& values, size_t from, size_t to, MergeOrder order) {
  FactValue acc = values[from];
  for (size_t i = from + 1; i < to; ++i) MergeFact(spec, &acc, FactValue(values[i]), order);
  if (spec.merge == MergeMode::kCount) acc.value = std::to_string(acc.count);
  return acc;
}

void ExpectSame(const FactValue& a, const FactValue& b, const std::string& what) {
  EXPECT_EQ(a.value, b.value) << what;
  EXPECT_EQ(a.values, b.values) << what;
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_EQ(a.evidence.line, b.evidence.line) << what;
  EXPECT_EQ(a.seen.line, b.seen.line) << what;
}

const MergeMode kModes[] = {MergeMode::kFirst, MergeMode::kLast, MergeMode::kMax,
                            MergeMode::kMin,   MergeMode::kSet,  MergeMode::kCount};

// A placeholder ("unknown") loses to any value, in every mode and order: a
// watchdog seen first as C++ frames keeps the op its own line names later,
// and a later placeholder does not replace a value already held.
TEST(FactMerge, PlaceholderLosesToAnyValue) {
  for (MergeMode m : {MergeMode::kFirst, MergeMode::kLast}) {
    FactSpec spec = Spec(m);
    spec.placeholder = "?";
    const std::vector<FactValue> v = {At("?", 1), At("BROADCAST", 2), At("?", 3)};
    for (MergeOrder order : {MergeOrder::kLater, MergeOrder::kBySeen}) {
      FactValue acc = Fold(spec, v, 0, v.size(), order);
      EXPECT_EQ(acc.value, "BROADCAST");
      EXPECT_EQ(acc.evidence.line, 2);
      FactValue rev = v[2];  // the same values merged in the reverse order
      MergeFact(spec, &rev, FactValue(v[1]), order);
      MergeFact(spec, &rev, FactValue(v[0]), order);
      EXPECT_EQ(rev.value, "BROADCAST");
    }
    FactValue only = Fold(spec, {At("?", 1), At("?", 2)}, 0, 2, MergeOrder::kLater);
    EXPECT_EQ(only.value, "?");  // nothing better: the placeholder stays
  }
}

TEST(FactMerge, EachModeKeepsWhatItSays) {
  const std::vector<FactValue> v = {At("5", 1), At("9", 2), At("2", 3), At("7", 4)};
  auto fold = [&](MergeMode m) { return Fold(Spec(m), v, 0, v.size(), MergeOrder::kLater); };
  EXPECT_EQ(fold(MergeMode::kFirst).value, "5");
  EXPECT_EQ(fold(MergeMode::kLast).value, "7");
  EXPECT_EQ(fold(MergeMode::kMax).value, "9");
  EXPECT_EQ(fold(MergeMode::kMax).evidence.line, 2);
  EXPECT_EQ(fold(MergeMode::kMin).value, "2");
  EXPECT_EQ(fold(MergeMode::kSet).values, (std::vector<std::string>{"2", "5", "7", "9"}));
  EXPECT_EQ(fold(MergeMode::kSet).evidence.line, 1);  // a set cites its earliest line
  EXPECT_EQ(fold(MergeMode::kCount).value, "4");
  EXPECT_EQ(fold(MergeMode::kCount).evidence.line, 1);
}

// Absorb: the state of later lines folded into the state of the earlier ones
// equals one pass over all of them, wherever the input is split.
TEST(FactMerge, SplittingTheInputAnywhereGivesTheSameValue) {
  const std::vector<FactValue> v = {At("3", 1), At("8", 2), At("8", 3), At("1", 4), At("6", 5), At("1", 6)};
  for (MergeMode m : kModes) {
    const FactSpec spec = Spec(m);
    const FactValue whole = Fold(spec, v, 0, v.size(), MergeOrder::kLater);
    for (size_t k = 1; k < v.size(); ++k) {
      FactValue left = Fold(spec, v, 0, k, MergeOrder::kLater);
      MergeFact(spec, &left, Fold(spec, v, k, v.size(), MergeOrder::kLater), MergeOrder::kLater);
      ExpectSame(left, whole, "mode " + std::to_string(static_cast<int>(m)) + " split at " + std::to_string(k));
    }
  }
}

// Subjects merged in Finalize meet in any order: by where each value was seen
// the result is the in-order one (distinct values: max/min keep the first of
// equal extremes only in input order).
TEST(FactMerge, BySeenInAnyOrderEqualsInputOrder) {
  std::vector<FactValue> v;
  for (int i = 1; i <= 8; ++i) v.push_back(At(std::to_string((i * 37) % 11), i));
  std::mt19937 rng(7);
  for (MergeMode m : kModes) {
    const FactSpec spec = Spec(m);
    const FactValue want = Fold(spec, v, 0, v.size(), MergeOrder::kLater);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<FactValue> shuffled = v;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      ExpectSame(Fold(spec, shuffled, 0, shuffled.size(), MergeOrder::kBySeen), want,
                 "mode " + std::to_string(static_cast<int>(m)) + " trial " + std::to_string(trial));
    }
  }
}

TEST(FactMerge, KeyedFactsPastTheCapAreCountedAndWindowsTrim) {
  std::vector<FactSpec> specs = {Spec(MergeMode::kLast), Spec(MergeMode::kLast)};
  specs[0].keyed = specs[1].keyed = true;
  specs[1].window = 4;
  FactSlots<FactValue> facts(2);
  KeyedSlots keyed(2);
  uint64_t over = 0;
  for (size_t batch = 0; batch < 3; ++batch) {
    KeyedSlots more(2);
    for (size_t i = 0; i < kMaxKeysPerFact / 2; ++i) {
      const int64_t line = static_cast<int64_t>(batch * kMaxKeysPerFact + i + 1);
      more.At(0)["k" + std::to_string(batch) + "-" + std::to_string(i)] = At("v", line);
      more.At(1)["k" + std::to_string(batch) + "-" + std::to_string(i)] = At("v", line);
    }
    MergeFacts(specs, &facts, &keyed, FactSlots<FactValue>(2), std::move(more), MergeOrder::kLater, &over);
  }
  EXPECT_EQ(keyed[0].size(), kMaxKeysPerFact);
  EXPECT_EQ(over, kMaxKeysPerFact / 2);
  EXPECT_LT(keyed[1].size(), 2 * 4 + 1);  // trimmed to the latest, never capped
}

}  // namespace
}  // namespace ncclscan

namespace ncclscan {
namespace {

// A subject's facts are set one at a time: the slots grow by half, not
// doubled (a million one-fact subjects must not hold two slots each).
TEST(FactSlots, GrowByHalf) {
  for (size_t n : {1, 2, 3, 5, 9, 13, 40}) {
    FactSlots<FactValue> slots(64);
    for (size_t f = 0; f < n; ++f) slots.At(static_cast<int>(n - 1 - f)).value = std::to_string(f);
    EXPECT_EQ(slots.slots().size(), n);
    EXPECT_LE(slots.slots().capacity(), n + std::max<size_t>(1, n / 2)) << n;
    // Sorted by fact whatever the order they were set in.
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(slots.slots()[i].first, static_cast<int>(i));
    ASSERT_NE(slots.Find(0), nullptr);
    EXPECT_EQ(slots.Find(0)->value, std::to_string(n - 1));
  }
}

}  // namespace
}  // namespace ncclscan
