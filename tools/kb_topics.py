"""RPM-MCTS's 14 algorithm categories (App. Table 3): the topics of the knowledge base's documents. Plain data, apart
from the knowledge base itself, so the command line can offer them without loading its embedding stack."""

TOPICS = ("Data Structures", "Algorithm Strategies", "String Processing", "Sorting and Searching", "Graph Theory",
          "Bit Manipulation", "Mathematics and Number Theory", "Computational Geometry", "Optimization Problems",
          "Two-Pointer Techniques", "Dynamic Programming", "Recursion and Backtracking", "Hashing Techniques",
          "Other")
