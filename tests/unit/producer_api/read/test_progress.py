"""A posting's progress at each destination, with the job each board holds for it."""

from producer_api.read.progress import Listing, ProgressStatus, progress
from schemas.deliveries import BoardJob, DeliveryState
from schemas.enums import DeliveryStatus, Destination, JobHeld, ListingStatus

LINKEDIN, INDEED = Destination.LINKEDIN, Destination.INDEED


def test_the_listing_is_the_job_the_board_holds_once_it_answered():
    live = BoardJob(
        JobHeld.OPEN,
        "urn:li:jobPosting:9",
        "https://www.linkedin.com/jobs/view/9",
        "acme",
        ListingStatus.LIVE,
        None,
        17,
    )
    states = {
        LINKEDIN: DeliveryState(LINKEDIN, "p", DeliveryStatus.DELIVERED, 2, job=live),
        INDEED: DeliveryState(INDEED, "p", DeliveryStatus.DELIVERED, 2),  # from before v3: nothing known
    }
    linkedin, indeed, _ = progress(states, 2)
    assert linkedin.listing == Listing(
        "urn:li:jobPosting:9", "https://www.linkedin.com/jobs/view/9", "live", None, 17
    )
    assert indeed.listing is None


def test_a_board_the_posting_leaves_out_is_not_targeted_unless_a_job_there_is_still_to_close():
    open_job = BoardJob(JobHeld.OPEN, "s1", status=ListingStatus.LIVE)
    states = {INDEED: DeliveryState(INDEED, "p", DeliveryStatus.DELIVERED, 1, job=open_job)}
    _, indeed, search = progress(states, 2, (LINKEDIN,))
    assert indeed.status == ProgressStatus.PENDING  # its job is closed next
    assert search.status == ProgressStatus.PENDING
    closed = BoardJob(JobHeld.CLOSED, "s1", status=ListingStatus.CLOSED)
    states = {INDEED: DeliveryState(INDEED, "p", DeliveryStatus.CLOSED, 2, job=closed)}
    assert progress(states, 2, (LINKEDIN,))[1].status == ProgressStatus.CLOSED
    states = {INDEED: DeliveryState(INDEED, "p", DeliveryStatus.DELIVERED, 3, job=closed)}
    assert progress(states, 3, (LINKEDIN,))[1].status == ProgressStatus.NOT_TARGETED
    assert progress({}, 0, (LINKEDIN,))[1].status == ProgressStatus.NOT_TARGETED
