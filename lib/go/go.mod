module github.com/flakewire/flakewire/lib/go

go 1.19
