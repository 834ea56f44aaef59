// Input sources: expanding command-line paths into files, and reading a file
// (plain, gzip or zstd, detected by magic bytes; "-" is stdin) as a byte stream.
//
// Thread-safety: a ByteReader is used by one thread at a time.
#ifndef NCCLSCAN_ENGINE_SOURCE_H_
#define NCCLSCAN_ENGINE_SOURCE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace ncclscan {

// Expands paths: directories are walked recursively (sorted, symlink loops
// detected, hidden entries skipped), files are kept, "-" is stdin. The result is
// sorted and de-duplicated so that output does not depend on argument order.
// Problems (missing path, unreadable directory, loop) go to *errors and the rest
// is still returned.
std::vector<std::string> ExpandInputs(const std::vector<std::string>& args, std::vector<std::string>* errors);

class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Opens path ("-" = stdin). Returns null and sets *err on failure.
  static std::unique_ptr<ByteReader> Open(const std::string& path, std::string* err);
  // Reads up to n decompressed bytes. Returns the count, 0 at end of input, -1 on
  // error (with *err; bytes decoded before the error were already returned).
  virtual ssize_t Read(char* buf, size_t n, std::string* err) = 0;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SOURCE_H_
