#include "parsers/pci_address.h"

#include "parsers/text_util.h"

namespace ncclscan {

namespace {
// The hex number of s, at most `max_digits` digits and at least one; -1 if not.
int64_t HexField(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (!IsHexDigit(c)) return -1;
    v = v * 16 + (IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}
}  // namespace

int64_t PciBusNumber(std::string_view s) {
  ConsumePrefix(&s, "PCI:");
  size_t c1 = s.find(':');
  if (c1 == std::string_view::npos) return s.find('.') == std::string_view::npos ? HexField(s, 12) : -1;
  // [domain:]bus:device[.function]
  std::string_view domain, bus, device, function = "0";
  size_t c2 = s.find(':', c1 + 1);
  if (c2 != std::string_view::npos) {
    domain = s.substr(0, c1);
    bus = s.substr(c1 + 1, c2 - c1 - 1);
    device = s.substr(c2 + 1);
  } else {
    domain = "0";
    bus = s.substr(0, c1);
    device = s.substr(c1 + 1);
  }
  size_t dot = device.find('.');
  if (dot != std::string_view::npos) {
    function = device.substr(dot + 1);
    device = device.substr(0, dot);
  }
  const int64_t d = HexField(domain, 8), b = HexField(bus, 2), v = HexField(device, 2), f = HexField(function, 1);
  if (d < 0 || b < 0 || v < 0 || f < 0 || f > 7) return -1;
  return d << 20 | b << 12 | v << 4 | f;
}

}  // namespace ncclscan
