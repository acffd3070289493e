"""The webhooks dispatcher (`jobpost webhooks`): every change of a posting's state, from
`jobpost.listing-events` and `jobpost.postings`, POSTed to the endpoints its employer
registered, signed per the Standard Webhooks specification."""
