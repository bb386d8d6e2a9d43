// Base64 and the packed dtypes routing leaves the engine in.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "capture/routing_encoding.h"
#include "moe/enum_names.h"
#include "common/error.h"

namespace moe {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), plain);
  }
}

TEST(Base64, RandomRoundTripsAtEveryLength) {
  std::mt19937 rng(5);
  for (size_t n = 0; n < 300; ++n) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string text = base64_encode(bytes);
    EXPECT_EQ(text.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(base64_decode(text), bytes);
  }
}

TEST(Base64, RejectsBadText) {
  EXPECT_THROW(base64_decode("abc"), Error);
  EXPECT_THROW(base64_decode("ab!d"), Error);
  EXPECT_THROW(base64_decode("a=bc"), Error);
}

TEST(RoutingEncoding, PacksLittleEndianOfEachDtype) {
  const int16_t ids[] = {0, 7, 255, 300};
  const std::string i32 = pack_routed_experts(ids, 4, RoutedExpertsDtype::Int32);
  ASSERT_EQ(i32.size(), 16u);
  int32_t v;
  std::memcpy(&v, i32.data() + 12, 4);
  EXPECT_EQ(v, 300);
  const std::string i16 = pack_routed_experts(ids, 4, RoutedExpertsDtype::Int16);
  EXPECT_EQ(static_cast<unsigned char>(i16[6]), 300 & 0xff);
  EXPECT_EQ(static_cast<unsigned char>(i16[7]), 300 >> 8);
  const std::string u8 = pack_routed_experts(ids, 3, RoutedExpertsDtype::Uint8);
  EXPECT_EQ(u8, std::string("\x00\x07\xff", 3));
}

TEST(RoutingEncoding, AutoPicksTheSmallestThatFitsAndUint8IsRefusedAbove256Experts) {
  EXPECT_EQ(resolve_routed_experts_dtype(RoutedExpertsDtype::Auto, 128), RoutedExpertsDtype::Uint8);
  EXPECT_EQ(resolve_routed_experts_dtype(RoutedExpertsDtype::Auto, 256), RoutedExpertsDtype::Uint8);
  EXPECT_EQ(resolve_routed_experts_dtype(RoutedExpertsDtype::Auto, 257), RoutedExpertsDtype::Int16);
  EXPECT_THROW(resolve_routed_experts_dtype(RoutedExpertsDtype::Uint8, 257), Error);
  EXPECT_EQ(resolve_routed_experts_dtype(RoutedExpertsDtype::Int32, 1000), RoutedExpertsDtype::Int32);
  EXPECT_FALSE(msg::enum_named<RoutedExpertsDtype>("int8"));
  EXPECT_EQ(msg::enum_named<RoutedExpertsDtype>("auto"), RoutedExpertsDtype::Auto);
}

TEST(RoutingEncoding, WeightsAsFloat16AndFloat32) {
  const float w[] = {0.5f, 0.25f, 1.0f / 3};
  const std::string f32 = pack_router_weights(w, 3, RouterWeightsDtype::Float32);
  float back;
  std::memcpy(&back, f32.data() + 8, 4);
  EXPECT_EQ(back, w[2]);
  const std::string f16 = pack_router_weights(w, 3, RouterWeightsDtype::Float16);
  ASSERT_EQ(f16.size(), 6u);
  uint16_t half;
  std::memcpy(&half, f16.data(), 2);
  EXPECT_EQ(half, 0x3800);  // 0.5 in IEEE half
}

}  // namespace
}  // namespace moe
