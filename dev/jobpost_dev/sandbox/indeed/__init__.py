"""Indeed's Job Sync API as the sandbox imitates it: `rules` (what Indeed refuses in a job),
`jobs` (a job, received, live or rejected, expired, reactivated), `board` (the board that
answers), `api` (the GraphQL route)."""
