"""LinkedIn's Job Posting API as the sandbox imitates it: `rules` (what LinkedIn refuses, and
when), `locations` (its location formats), `jobs` (a job and its listing status), `tasks`
(the asynchronous tasks), `board` (the board that answers), `api` (the HTTP routes)."""
