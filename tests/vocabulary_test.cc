#include "rules/vocabulary.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/test_util.h"

namespace ncclscan {
namespace {

// Each table holds one row per enumerator, in enum order, with a unique name
// that parses back to it.
template <typename E>
void ExpectRoundTrip(int count, const char* (*name)(E), bool (*parse)(std::string_view, E*)) {
  std::set<std::string> names;
  for (int i = 0; i < count; ++i) {
    const E e = static_cast<E>(i);
    const std::string n = name(e);
    EXPECT_FALSE(n.empty()) << i;
    EXPECT_TRUE(names.insert(n).second) << "two rows named " << n;
    E back;
    ASSERT_TRUE(parse(n, &back)) << n;
    EXPECT_EQ(static_cast<int>(back), i) << n;
  }
  E none;
  EXPECT_FALSE(parse("no such word", &none));
}

TEST(Vocabulary, EveryTableHasOneRowPerWordInOrder) {
  ExpectRoundTrip<CorrelationKind>(static_cast<int>(CorrelationKind::kCount), KindName, ParseCorrelationKind);
  ExpectRoundTrip<CollectiveCheck>(static_cast<int>(CollectiveCheck::kCount), CheckName, ParseCollectiveCheck);
  ExpectRoundTrip<ConditionOp>(static_cast<int>(ConditionOp::kCount), OpName, ParseConditionOp);
  ExpectRoundTrip<Owner>(static_cast<int>(Owner::kCount), OwnerName, ParseOwner);
  ExpectRoundTrip<Category>(static_cast<int>(Category::kCount), CategoryName, ParseCategory);
  ExpectRoundTrip<KeyKind>(static_cast<int>(KeyKind::kCount), KeyKindName, ParseKeyKind);
  ExpectRoundTrip<Status>(static_cast<int>(Status::kCount), StatusName, ParseStatus);
  EXPECT_EQ(CorrelationKinds().size(), static_cast<size_t>(CorrelationKind::kCount));
  EXPECT_EQ(Categories().size(), static_cast<size_t>(Category::kCount));
  EXPECT_EQ(Statuses().size(), static_cast<size_t>(Status::kCount));
}

TEST(Vocabulary, EveryCategoryHasAnOwner) {
  for (const CategoryInfo& c : Categories()) {
    EXPECT_LT(static_cast<int>(DefaultOwner(c.id)), static_cast<int>(Owner::kCount)) << c.name;
  }
  EXPECT_EQ(std::string(OwnerName(DefaultOwner(Category::kIb))), "fabric");
  EXPECT_EQ(std::string(OwnerName(DefaultOwner(Category::kCuda))), "gpu-hardware");
  EXPECT_EQ(std::string(OwnerName(DefaultOwner(Category::kInit))), "library");
}

TEST(Vocabulary, KindKeysAreTheirOwnAndRequiredOnesAreRead) {
  std::set<std::string_view> common(CommonCorrelationKeys().begin(), CommonCorrelationKeys().end());
  for (const CorrelationKindInfo& k : CorrelationKinds()) {
    for (const auto& key : k.keys) EXPECT_FALSE(common.count(key)) << k.name << " repeats common key " << key;
    for (const auto& key : k.required) {
      EXPECT_NE(std::find(k.keys.begin(), k.keys.end(), key), k.keys.end()) << k.name << " requires unread " << key;
    }
  }
}

TEST(Vocabulary, OnlyComparisonsAreNumeric) {
  int numeric = 0;
  for (int i = 0; i < static_cast<int>(ConditionOp::kCount); ++i) numeric += IsNumericOp(static_cast<ConditionOp>(i));
  EXPECT_EQ(numeric, 4);
  EXPECT_TRUE(IsNumericOp(ConditionOp::kGe));
  EXPECT_FALSE(IsNumericOp(ConditionOp::kMatches));
}

TEST(Vocabulary, UndecidedStatusesClaimNothing) {
  std::set<std::string> undecided;
  for (const StatusInfo& s : Statuses()) {
    if (IsUndecided(s.id)) undecided.insert(s.name);
  }
  EXPECT_EQ(undecided, (std::set<std::string>{"incomplete", "partial", "unknown"}));
  EXPECT_EQ(std::string(StatusHeadline(Status::kHung)), "HUNG");
}

// Every correlation kind and every collective check is used by a built-in rule
// file: a word the engine handles but no rule names is dead code, and a word
// dropped from the rule files (a correlation kind that no longer runs) fails here.
TEST(Vocabulary, BuiltInRulesUseEveryKindAndCheck) {
  const RuleSet& rules = BuiltInRules();
  std::set<int> kinds, checks;
  for (const CompiledCorrelation& c : rules.correlations()) {
    kinds.insert(static_cast<int>(c.spec.kind));
    if (c.spec.kind == CorrelationKind::kCollective) checks.insert(static_cast<int>(c.spec.check));
  }
  for (int i = 0; i < static_cast<int>(CorrelationKind::kCount); ++i) {
    EXPECT_TRUE(kinds.count(i)) << "no built-in correlation of kind " << KindName(static_cast<CorrelationKind>(i));
  }
  for (int i = 0; i < static_cast<int>(CollectiveCheck::kCount); ++i) {
    EXPECT_TRUE(checks.count(i)) << "no built-in correlation runs check " << CheckName(static_cast<CollectiveCheck>(i));
  }
}

}  // namespace
}  // namespace ncclscan
