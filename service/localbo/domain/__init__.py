"""The service's vocabulary: trial states and sources, a study's space, and the records the API returns.

Everything above storage speaks these types; nothing here touches the database or torch's RNG.
"""

from localbo.domain.records import iso, study_out, trial_out
from localbo.domain.study_space import StudySpace
from localbo.domain.vocabulary import Source, TrialState

__all__ = ["Source", "StudySpace", "TrialState", "iso", "study_out", "trial_out"]
