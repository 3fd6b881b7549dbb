"""How many events a warp's slot is sized for when the user names no capacity: what the
memory budget allows, clamped, and no more than the tier knows a warp can take."""
from gwatch_nb import layout
from gwatch_nb.cuda.session import BUFFER_BUDGET_BYTES, MAX_CAPACITY, MIN_CAPACITY, default_capacity

FREE = 80 << 30  # an H200's free memory at the start of a session, roughly


def test_the_budget_sets_the_capacity_of_a_kernel_of_unknown_need():
    slots = 1000
    capacity = default_capacity(slots, FREE, 2)
    records = layout.slot_records(capacity, 2)
    assert records * slots * layout.RECORD_BYTES <= BUFFER_BUDGET_BYTES
    assert layout.slot_records(capacity + 2 * layout.GROUP_MAX_EVENTS, 2) * slots * layout.RECORD_BYTES \
        > BUFFER_BUDGET_BYTES


def test_little_free_memory_means_a_smaller_capacity():
    assert default_capacity(1000, 1 << 30, 2) < default_capacity(1000, FREE, 2)


def test_the_capacity_stays_within_its_clamps():
    assert default_capacity(1, FREE, 2) == MAX_CAPACITY
    assert default_capacity(10 ** 8, FREE, 1) == MIN_CAPACITY


def test_a_bounded_warp_gets_what_it_can_take_rounded_up_to_even():
    assert default_capacity(1000, FREE, 2, most_events=255) == 256
    assert default_capacity(1000, FREE, 2, most_events=256) == 256
    assert default_capacity(1, FREE, 2, most_events=32) == 32  # below the clamp: it can take no more


def test_the_bound_never_raises_the_capacity():
    budgeted = default_capacity(10 ** 8, FREE, 1)
    assert default_capacity(10 ** 8, FREE, 1, most_events=10 ** 6) == budgeted
    assert default_capacity(1, FREE, 2, most_events=10 ** 6) == MAX_CAPACITY


def test_an_unbounded_warp_is_sized_by_the_budget_alone():
    assert default_capacity(1000, FREE, 2, most_events=None) == default_capacity(1000, FREE, 2)
