module example.com/wordfreq

go 1.25

require github.com/google/go-cmp v0.7.0
