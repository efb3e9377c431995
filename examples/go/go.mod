module example.com/vend

go 1.19
