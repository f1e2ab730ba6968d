"""Planning: computing a study's next points away from the requests that wait for them.

- ``jobs``: at most one background job per study in this process, shared by everyone who waits.
- ``claims``: at most one computing process per study across processes (a claim on the study row).
- ``runner``: one policy computation: the request from a snapshot, the executor, the answer checked.
- ``fallback``: the one generator of safe points when the policy fails or is late.
- ``planner``: the job itself: claim, snapshot, run, store the plan if the study is still the same.
"""
