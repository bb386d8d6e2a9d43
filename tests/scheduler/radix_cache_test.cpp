#include "scheduler/radix_cache.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace moe {
namespace {

using Ids = std::vector<int32_t>;

// A pool and a cache, with helpers to insert token runs backed by freshly allocated slots.
class RadixCacheTest : public ::testing::Test {
 protected:
  KvSlotPool pool{64};
  RadixCache cache{pool};

  Ids insert_fresh(const Ids& tokens) {
    Ids slots = *pool.alloc(static_cast<int64_t>(tokens.size()));
    EXPECT_EQ(cache.insert(tokens, slots), 0u);
    return slots;
  }
  RadixCache::Match match(const Ids& tokens) { return cache.match_prefix(tokens); }
  size_t matched(const Ids& tokens) { return match(tokens).slots.size(); }
};

TEST_F(RadixCacheTest, EmptyCacheMatchesNothing) {
  EXPECT_EQ(matched({1, 2, 3}), 0u);
  EXPECT_EQ(cache.cached_tokens(), 0);
  EXPECT_EQ(cache.evict(10), 0);
}

TEST_F(RadixCacheTest, MatchReturnsTheSlotsOfTheLongestCachedPrefix) {
  const Ids slots = insert_fresh({1, 2, 3, 4});
  EXPECT_EQ(match({1, 2, 3, 4}).slots, slots);
  EXPECT_EQ(match({1, 2, 3, 4, 5, 6}).slots, slots);
  EXPECT_EQ(match({1, 2}).slots, Ids(slots.begin(), slots.begin() + 2));
  EXPECT_EQ(match({1, 2, 7}).slots, Ids(slots.begin(), slots.begin() + 2));
  EXPECT_EQ(matched({2, 3}), 0u);
  EXPECT_EQ(cache.cached_tokens(), 4);
}

TEST_F(RadixCacheTest, InsertReportsWhatWasAlreadyCachedAndKeepsTheOriginalSlots) {
  const Ids first = insert_fresh({1, 2, 3});
  const Ids second = *pool.alloc(5);
  EXPECT_EQ(cache.insert(Ids{1, 2, 3, 4, 5}, second), 3u);
  const Ids expected{first[0], first[1], first[2], second[3], second[4]};
  EXPECT_EQ(match({1, 2, 3, 4, 5}).slots, expected);
  EXPECT_EQ(cache.cached_tokens(), 5);
  // A branch off the middle of an edge: the shared part is reported, the rest is stored.
  const Ids third = *pool.alloc(4);
  EXPECT_EQ(cache.insert(Ids{1, 2, 9, 9}, third), 2u);
  EXPECT_EQ(match({1, 2, 9, 9}).slots, (Ids{first[0], first[1], third[2], third[3]}));
  EXPECT_EQ(match({1, 2, 3, 4, 5}).slots, expected);
  EXPECT_EQ(cache.cached_tokens(), 7);
}

TEST_F(RadixCacheTest, AMatchInsideAnEdgeSplitsItSoALockCoversExactlyTheMatch) {
  insert_fresh({1, 2, 3, 4});
  RadixCache::Match partial = match({1, 2, 9});
  ASSERT_EQ(partial.slots.size(), 2u);
  cache.lock(partial.node);
  EXPECT_EQ(cache.evictable_tokens(), 2);
  EXPECT_EQ(cache.evict(100), 2);  // only the unlocked tail {3, 4}
  EXPECT_EQ(matched({1, 2, 3, 4}), 2u);
  cache.unlock(partial.node);
  EXPECT_EQ(cache.evict(100), 2);
  EXPECT_EQ(cache.cached_tokens(), 0);
  EXPECT_EQ(pool.num_free(), 64);
}

TEST_F(RadixCacheTest, EvictsLeastRecentlyUsedLeavesFirst) {
  insert_fresh({1, 1});
  insert_fresh({2, 2});
  insert_fresh({3, 3});
  matched({1, 1});  // now {2, 2} is the oldest, then {3, 3}
  EXPECT_EQ(cache.evict(1), 2);  // a leaf goes whole
  EXPECT_EQ(matched({2, 2}), 0u);
  EXPECT_EQ(matched({1, 1}), 2u);  // touched again: {3, 3} is now the oldest
  EXPECT_EQ(cache.evict(2), 2);
  EXPECT_EQ(matched({3, 3}), 0u);
  EXPECT_EQ(matched({1, 1}), 2u);
  EXPECT_EQ(pool.num_free(), 62);
}

TEST_F(RadixCacheTest, InnerNodesBecomeEvictableOnceTheirChildrenAreGone) {
  insert_fresh({1, 2});
  const Ids longer = *pool.alloc(4);
  cache.insert(Ids{1, 2, 3, 4}, longer);
  pool.free(std::span<const int32_t>(longer).first(2));  // the duplicates of {1, 2}
  EXPECT_EQ(cache.evict(3), 4);  // the leaf {3, 4}, then {1, 2} which became a leaf
  EXPECT_EQ(cache.cached_tokens(), 0);
  EXPECT_EQ(pool.num_free(), 64);
}

TEST_F(RadixCacheTest, LocksAreCountedAndProtectAncestors) {
  insert_fresh({1, 2, 3});
  RadixCache::Match deep = match({1, 2, 3});
  RadixCache::Match shallow = match({1});
  cache.lock(deep.node);
  cache.lock(deep.node);
  cache.lock(shallow.node);
  EXPECT_EQ(cache.evictable_tokens(), 0);
  cache.unlock(deep.node);
  EXPECT_EQ(cache.evict(10), 0);
  cache.unlock(deep.node);
  EXPECT_EQ(cache.evictable_tokens(), 2);
  EXPECT_EQ(cache.evict(10), 2);  // {2, 3}; {1} is still locked
  EXPECT_EQ(matched({1, 2, 3}), 1u);
  cache.unlock(shallow.node);
  EXPECT_THROW(cache.unlock(shallow.node), std::logic_error);
  cache.flush();
  EXPECT_EQ(cache.cached_tokens(), 0);
  EXPECT_EQ(pool.num_free(), 64);
}

TEST_F(RadixCacheTest, LockingTheRootIsANoOp) {
  RadixCache::Match none = match({5});
  cache.lock(none.node);
  cache.unlock(none.node);
  cache.lock(nullptr);
  cache.unlock(nullptr);
  EXPECT_EQ(cache.evictable_tokens(), 0);
}

}  // namespace
}  // namespace moe
