package view

// Passage is a piece of text to rank by relevance (projections/search.Rank
// ranks them for memory_search and wiki_search): a paragraph of a file,
// with the heading that opens it.
type Passage struct {
	Title string
	Text  string
}

// Ranked is a passage found: its index among the passages given, its
// score and its snippet, marked as a search hit's.
type Ranked struct {
	Index   int
	Score   float64
	Snippet string
	Marks   [][2]int
}
