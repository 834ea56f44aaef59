// ReplaceFile: writes a file whole and puts it in place with rename(2), so a
// reader never sees half of it, and so nothing planted beside it is written
// through. The bytes go to a temporary file that mkstemp creates exclusively
// (O_EXCL: never an existing file, never through a symbolic link) in the
// target's own directory; the rename then replaces the directory entry at
// `path` (a symbolic link there is replaced, not followed).
//
// Thread-safety: a free function; concurrent calls for different paths are
// safe. The process umask is read once, at the first call (umask(2) can only
// be read by setting it: it is 0 for that instant, so make the first call
// where no other thread creates files, as the CLI does).
#ifndef NCCLSCAN_ENGINE_IO_REPLACE_FILE_H_
#define NCCLSCAN_ENGINE_IO_REPLACE_FILE_H_

#include <string>
#include <string_view>

namespace ncclscan {

// False with *err ("cannot write PATH: reason") when the file could not be
// written; then no temporary file is left behind and `path` is unchanged.
// The new file's mode is 0666 less the umask, as open(2) would give it.
bool ReplaceFile(const std::string& path, std::string_view bytes, std::string* err);

// Writes all of `bytes` to `fd` (short writes continued, EINTR retried);
// false with errno set (EIO where write(2) wrote nothing and said nothing).
bool WriteAll(int fd, std::string_view bytes);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_IO_REPLACE_FILE_H_
