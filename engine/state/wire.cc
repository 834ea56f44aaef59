#include "engine/state/wire.h"

#include <cmath>
#include <cstring>

namespace ncclscan {

void WireWriter::U(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void WireWriter::S(std::string_view s) {
  U(s.size());
  out_.append(s.data(), s.size());
}

void WireWriter::D(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

uint64_t WireReader::U() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in_.empty()) break;
    const auto byte = static_cast<unsigned char>(in_[0]);
    in_.remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  ok_ = false;
  in_ = {};
  return 0;
}

std::string WireReader::S() {
  uint64_t n = U();
  if (n > in_.size()) {
    ok_ = false;
    in_ = {};
    return {};
  }
  std::string s(in_.substr(0, n));
  in_.remove_prefix(n);
  return s;
}

double WireReader::D() {
  if (in_.size() < 8) {
    ok_ = false;
    in_ = {};
    return 0;
  }
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
  in_.remove_prefix(8);
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

size_t WireReader::Count() {
  uint64_t n = U();
  if (n > in_.size()) {
    ok_ = false;
    in_ = {};
    return 0;
  }
  return static_cast<size_t>(n);
}

int WireReader::Index(int64_t lo, size_t n) {
  int64_t v = I();
  if (v < lo || v >= static_cast<int64_t>(n)) {
    ok_ = false;
    return lo < 0 ? -1 : 0;
  }
  return static_cast<int>(v);
}

void CheckLine(WireReader* r, int file, int64_t line) {
  if (line < 0 || (file >= 0 && line < 1)) r->Fail();
}

void CheckTime(WireReader* r, double t) {
  if (!std::isfinite(t)) r->Fail();
}

void PutStrings(WireWriter* w, const std::vector<std::string>& v) {
  w->U(v.size());
  for (const auto& s : v) w->S(s);
}

void GetStrings(WireReader* r, std::vector<std::string>* v) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) v->push_back(r->S());
}

}  // namespace ncclscan
