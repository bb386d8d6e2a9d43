#include "scheduler/kv_slot_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "common/error.h"

namespace moe {
namespace {

TEST(KvSlotPool, HandsOutDistinctSlotsAndNeverThePaddingSlot) {
  KvSlotPool pool(10);
  EXPECT_EQ(pool.capacity(), 10);
  EXPECT_EQ(pool.num_slots(), 11);
  auto a = pool.alloc(4);
  auto b = pool.alloc(6);
  ASSERT_TRUE(a && b);
  std::set<int32_t> all(a->begin(), a->end());
  all.insert(b->begin(), b->end());
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), 10);
  EXPECT_EQ(all.count(KvSlotPool::kPaddingSlot), 0u);
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_EQ(pool.num_used(), 10);
}

TEST(KvSlotPool, RefusesMoreThanIsFreeWithoutTakingAnything) {
  KvSlotPool pool(5);
  ASSERT_TRUE(pool.alloc(3));
  EXPECT_FALSE(pool.alloc(3));
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_TRUE(pool.alloc(2));
  EXPECT_FALSE(pool.alloc(1));
  EXPECT_TRUE(pool.alloc(0));
}

TEST(KvSlotPool, FreedSlotsCanBeAllocatedAgain) {
  KvSlotPool pool(4);
  auto slots = pool.alloc(4);
  pool.free(std::span<const int32_t>(*slots).first(2));
  EXPECT_EQ(pool.num_free(), 2);
  auto again = pool.alloc(2);
  ASSERT_TRUE(again);
  std::vector<int32_t> freed(slots->begin(), slots->begin() + 2), got = *again;
  std::sort(freed.begin(), freed.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, freed);
}

TEST(KvSlotPool, DoubleFreeAndForeignSlotsAreCaught) {
  KvSlotPool pool(4);
  auto slots = pool.alloc(1);
  pool.free(*slots);
  EXPECT_THROW(pool.free(*slots), std::logic_error);
  const std::vector<int32_t> padding{KvSlotPool::kPaddingSlot}, outside{5};
  EXPECT_THROW(pool.free(padding), std::logic_error);
  EXPECT_THROW(pool.free(outside), std::logic_error);
  EXPECT_EQ(pool.num_free(), 4);
}

TEST(KvSlotPool, NeedsAtLeastOneSlot) {
  EXPECT_THROW(KvSlotPool(0), Error);
}

}  // namespace
}  // namespace moe
