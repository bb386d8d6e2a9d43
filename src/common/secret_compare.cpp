#include "common/secret_compare.h"

namespace moe {

bool same_secret(std::string_view given, std::string_view expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  // Every byte of `given` is read whatever the others hold; a missing byte of `expected` reads as 0.
  for (size_t i = 0; i < given.size(); ++i)
    difference |= static_cast<unsigned char>(given[i]) ^
                  static_cast<unsigned char>(i < expected.size() ? expected[i] : 0);
  return difference == 0;
}

}  // namespace moe
