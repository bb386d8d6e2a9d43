// Routing rows kept raw: decoding either transport form, slicing, appending, listing.
#include "api/raw_rows.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "capture/routing_encoding.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using nlohmann::json;

TEST(RawRows, ReadsRawAndBase64ArraysAlike) {
  msg::EncodedArray raw = test::int32_rows(3, 2, 2, 0);
  msg::EncodedArray text = raw;
  text.raw = false;
  text.data = base64_encode(raw.data);
  const RawRows a = RawRows::from(raw);
  const RawRows b = RawRows::from(text);
  EXPECT_EQ(a.rows(), 3);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(a.bytes(), b.bytes());
  EXPECT_EQ(a.dtype(), "int32");
}

TEST(RawRows, SlicesAndAppendsByWholeRows) {
  RawRows rows = RawRows::from(test::int32_rows(2, 1, 2, 0));
  rows.append(RawRows::from(test::int32_rows(1, 1, 2, 4)));
  EXPECT_EQ(rows.rows(), 3);
  EXPECT_EQ(test::int32_values(rows.bytes()), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(test::int32_values(rows.slice(1, 2).bytes()), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(rows.slice(2, 99).rows(), 1);  // clamped
  EXPECT_EQ(rows.slice(5, 9).rows(), 0);
  EXPECT_EQ(rows.slice(5, 9).shape(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(RawRows, RefusesInconsistentArrays) {
  msg::EncodedArray short_array = test::int32_rows(2, 1, 2, 0);
  short_array.data.pop_back();
  EXPECT_THROW(RawRows::from(short_array), std::logic_error);
  msg::EncodedArray unknown = test::int32_rows(1, 1, 1, 0);
  unknown.dtype = "int64";
  EXPECT_THROW(RawRows::from(unknown), std::logic_error);
  RawRows rows = RawRows::from(test::int32_rows(1, 1, 2, 0));
  EXPECT_THROW(rows.append(RawRows::from(test::int32_rows(1, 2, 2, 0))), std::logic_error);
}

TEST(RawRows, ListsEveryIntegerDtype) {
  // uint8 ids 250..255 and int16 ids -1, 300: the values, not their bytes, come out.
  const msg::EncodedArray u8{.data = "\xfa\xfb\xfc\xfd\xfe\xff", .raw = true, .shape = {3, 1, 2}, .dtype = "uint8"};
  json object;
  put_list(object, "e", RawRows::from(u8));
  EXPECT_EQ(object["e"], json::parse("[[[250, 251]], [[252, 253]], [[254, 255]]]"));
  const int16_t values[] = {-1, 300};
  const msg::EncodedArray i16{.data = std::string(reinterpret_cast<const char*>(values), 4), .raw = true,
                              .shape = {1, 2, 1}, .dtype = "int16"};
  put_list(object, "f", RawRows::from(i16));
  EXPECT_EQ(object["f"], json::parse("[[[-1], [300]]]"));
  const msg::EncodedArray weights{.data = std::string(4, '\0'), .raw = true, .shape = {1, 1, 1}, .dtype = "float32"};
  EXPECT_THROW(put_list(object, "w", RawRows::from(weights)), std::logic_error);
}

TEST(RawRows, Base64FormHasShapeAndDtype) {
  json object;
  put_base64(object, "routed_experts", RawRows::from(test::int32_rows(1, 1, 1, 7)));
  EXPECT_EQ(object["routed_experts"], base64_encode(std::string("\x07\0\0\0", 4)));
  EXPECT_EQ(object["routed_experts_shape"], json({1, 1, 1}));
  EXPECT_EQ(object["routed_experts_dtype"], "int32");
}

}  // namespace
}  // namespace moe::api
