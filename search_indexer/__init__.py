"""The Elasticsearch indexer of jobpost.postings."""
