module github.com/flakewire/flakewire/clients/go

go 1.19
