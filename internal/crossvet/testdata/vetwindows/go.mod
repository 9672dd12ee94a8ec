module vetwindows

go 1.26
