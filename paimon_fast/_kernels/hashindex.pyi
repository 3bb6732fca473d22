import numpy as np
from typing import List, Optional, Tuple

def binary_row_hash(
    n: int,
    specs: List[
        Tuple[int, int, Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]
    ],
) -> np.ndarray: ...
def int_set_order(values: np.ndarray, expected: int = 16) -> np.ndarray: ...
