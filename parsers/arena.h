// Arena: bump allocator for text that a parser had to rewrite (unescaped docker
// JSON, lines with ANSI codes removed). string_views handed out stay valid until
// Reset(); blocks are kept across Reset() so steady-state scanning allocates nothing.
//
// Thread-safety: none; one Arena per pipeline token.
#ifndef NCCLSCAN_PARSERS_ARENA_H_
#define NCCLSCAN_PARSERS_ARENA_H_

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace ncclscan {

class Arena {
 public:
  static constexpr size_t kBlockSize = 256 * 1024;

  char* Allocate(size_t n) {
    if (current_ < blocks_.size() && used_ + n <= blocks_[current_].size) {
      char* p = blocks_[current_].data.get() + used_;
      used_ += n;
      return p;
    }
    // Move to the next block that fits; a request larger than a block gets its own.
    for (++current_; current_ < blocks_.size(); ++current_) {
      if (blocks_[current_].size >= n) break;
    }
    if (current_ >= blocks_.size()) {
      size_t size = n > kBlockSize ? n : kBlockSize;
      blocks_.push_back(Block{std::unique_ptr<char[]>(new char[size]), size});
      current_ = blocks_.size() - 1;
    }
    used_ = n;
    return blocks_[current_].data.get();
  }

  std::string_view Store(std::string_view s) {
    char* p = Allocate(s.size());
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    return std::string_view(p, s.size());
  }

  void Reset() {
    // Oversized blocks are dropped so that one 100 MB line does not pin 100 MB.
    std::vector<Block> kept;
    for (auto& b : blocks_) {
      if (b.size == kBlockSize && kept.size() < 8) kept.push_back(std::move(b));
    }
    blocks_ = std::move(kept);
    current_ = 0;
    used_ = 0;
  }

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size;
  };
  std::vector<Block> blocks_;
  size_t current_ = 0;
  size_t used_ = 0;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_ARENA_H_
