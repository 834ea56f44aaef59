#include "rules/literal_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace ncclscan {
namespace {

std::vector<int> Naive(const std::vector<std::string>& atoms, const std::string& text) {
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<int> out;
  for (size_t i = 0; i < atoms.size(); ++i) {
    if (lower.find(atoms[i]) != std::string::npos) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> Fast(const LiteralMatcher& m, const std::string& text) {
  std::vector<int> ids;
  std::vector<uint8_t> seen;
  m.FindAll(text, &ids, &seen);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(LiteralMatcher, FindsAtomsCaseInsensitively) {
  std::vector<std::string> atoms = {"using network ", ": opcount ", "nccl warn", "gdrdma", "cuda failure '"};
  LiteralMatcher m;
  for (const auto& a : atoms) m.Add(a);
  m.Build();
  EXPECT_EQ(Fast(m, "n1:1:1 [0] NCCL INFO Using network IB"), (std::vector<int>{0}));
  EXPECT_EQ(Fast(m, "AllReduce: opCount 2f sendbuff"), (std::vector<int>{1}));
  EXPECT_EQ(Fast(m, "via NET/IB/0/GDRDMA"), (std::vector<int>{3}));
  EXPECT_EQ(Fast(m, "GDRDMA at the start and Cuda failure 'x' at the end"), (std::vector<int>{3, 4}));
  EXPECT_EQ(Fast(m, "nothing here"), (std::vector<int>{}));
  EXPECT_EQ(Fast(m, ""), (std::vector<int>{}));
}

// Property test: on random text built from atom fragments, the shift-table
// search agrees with a naive search (every atom length, every position).
TEST(LiteralMatcher, AgreesWithNaiveSearch) {
  std::mt19937 rng(42);
  const std::string alphabet = "abcAB :[]0x-";
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> atoms;
    int na = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < na; ++i) {
      std::string a;
      int len = 1 + static_cast<int>(rng() % 9);
      for (int k = 0; k < len; ++k) a += static_cast<char>(std::tolower(alphabet[rng() % alphabet.size()]));
      atoms.push_back(a);
    }
    LiteralMatcher m;
    for (const auto& a : atoms) m.Add(a);
    m.Build();
    for (int t = 0; t < 20; ++t) {
      std::string text;
      int len = static_cast<int>(rng() % 60);
      while (static_cast<int>(text.size()) < len) {
        if (rng() % 3 == 0)
          text += atoms[rng() % atoms.size()];
        else
          text += alphabet[rng() % alphabet.size()];
      }
      ASSERT_EQ(Fast(m, text), Naive(atoms, text)) << "text '" << text << "'";
    }
  }
}

// The same with a rule-set-sized atom list (every bucket shared by many atoms,
// fingerprints cut from long atoms, wildcard-padded short ones) and texts long
// enough for the 8-byte blocks and the byte-by-byte tail.
TEST(LiteralMatcher, AgreesWithNaiveSearchOnManyAtoms) {
  std::mt19937 rng(1234);
  const std::string alphabet = "abcdeNCL :[]0x-_/";
  for (int round = 0; round < 40; ++round) {
    std::vector<std::string> atoms;
    int na = 100 + static_cast<int>(rng() % 80);
    for (int i = 0; i < na; ++i) {
      std::string a;
      int len = 1 + static_cast<int>(rng() % (i % 4 == 0 ? 7 : 40));
      for (int k = 0; k < len; ++k) a += static_cast<char>(std::tolower(alphabet[rng() % alphabet.size()]));
      atoms.push_back(a);
    }
    LiteralMatcher m;
    for (const auto& a : atoms) m.Add(a);
    m.Build();
    for (int t = 0; t < 50; ++t) {
      std::string text;
      int len = static_cast<int>(rng() % 400);
      while (static_cast<int>(text.size()) < len) {
        if (rng() % 4 == 0) {
          std::string a = atoms[rng() % atoms.size()];
          for (char& c : a) {
            if (rng() % 2) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          }
          text += a;
        } else {
          text += alphabet[rng() % alphabet.size()];
        }
      }
      ASSERT_EQ(Fast(m, text), Naive(atoms, text)) << "text '" << text << "'";
    }
  }
}

// Every atom at every offset of texts of every length up to 40: the text's
// first and last bytes, both sample alignments (stride 2) and the zero-padded
// tail of each length. The filler shares letters with the atoms.
TEST(LiteralMatcher, FindsAtomsAtEveryOffset) {
  const std::vector<std::string> atoms = {"a",      "ab",      "nccl",       "device",         "device ",
                                          "net/ib", "opcount", ": opcount ", "using network ", "cuda failure '",
                                          "x"};
  LiteralMatcher m;
  for (const auto& a : atoms) m.Add(a);
  m.Build();
  const std::string filler = "bcde-NET/I devic opcoun :  using networ cuda failur";
  for (size_t id = 0; id < atoms.size(); ++id) {
    for (size_t len = atoms[id].size(); len <= 40; ++len) {
      for (size_t at = 0; at + atoms[id].size() <= len; ++at) {
        std::string text = filler.substr(0, len);
        text.resize(len, '.');
        text.replace(at, atoms[id].size(), atoms[id]);
        ASSERT_EQ(Fast(m, text), Naive(atoms, text)) << "text '" << text << "'";
      }
    }
  }
}

}  // namespace
}  // namespace ncclscan
